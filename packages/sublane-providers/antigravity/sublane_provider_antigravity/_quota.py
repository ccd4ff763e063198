"""Antigravity's model list and per-model quota: ``:fetchAvailableModels`` (PROTOCOLS §3.6).

``models`` is an object keyed by native model id, each with an optional
``quotaInfo {remainingFraction 0..1, resetTime}``. Each model is its own window (QUOTA-4: only the
exact requested model's quota counts), named after the model. A model without
``remainingFraction`` has unknown quota, never zero.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sublane_core import signals

QuotaWindow = signals.QuotaWindow

#: Internal ids the endpoint lists that are not models a client can call.
INTERNAL_IDS = frozenset(
    {"chat_20706", "chat_23310", "tab_flash_lite_preview", "tab_jump_flash_lite_preview"}
)


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def models_of(payload: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The callable models of a ``fetchAvailableModels`` answer, by id."""
    models = payload.get("models")
    if not isinstance(models, dict):
        raise ValueError("fetchAvailableModels answered no model object")
    return {
        name: entry if isinstance(entry, dict) else {}
        for name, entry in models.items()
        if isinstance(name, str) and name and name not in INTERNAL_IDS
    }


def windows_from_models(payload: Mapping[str, Any]) -> tuple[QuotaWindow, ...]:
    """One main window per model with quota information."""
    windows = []
    for name, entry in models_of(payload).items():
        info = entry.get("quotaInfo")
        if not isinstance(info, dict):
            continue
        fraction = info.get("remainingFraction")
        used = None
        if isinstance(fraction, int | float) and not isinstance(fraction, bool) and 0 <= fraction <= 1:
            used = round((1 - float(fraction)) * 100, 4)
        windows.append(
            QuotaWindow(
                window=name,
                used_percent=used,
                window_seconds=None,
                resets_at=_timestamp(info.get("resetTime")),
                limit_reached=used is not None and used >= 100,
                main=True,
                model=name,
            )
        )
    return tuple(windows)
