"""Codex quota: the ``x-codex-*`` response headers and ``GET /wham/usage`` (PROTOCOLS §1.11).

Only the main limit (the ``codex`` family, ``rate_limit`` in wham/usage) is ``main``; additional
named limits are reported but can never exclude an account (QUOTA-4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sublane_core import signals
from sublane_providers.kit import QuotaHeaderMemo, headers_with_prefix

QuotaWindow = signals.QuotaWindow

_WINDOWS = ("primary", "secondary")


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _number(value: str | None) -> float | None:
    """A header's number (``float`` ignores surrounding whitespace); ``None`` when it is not one."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


_FIELDS = ("used-percent", "window-minutes", "reset-at", "reset-after-seconds")


def _window_keys(family: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(window, its four header names)`` of a limit family, for both windows."""
    return tuple((name, tuple(f"x-{family}-{name}-{field}" for field in _FIELDS)) for name in _WINDOWS)


_CODEX_KEYS = _window_keys("codex")
_PRIMARY_USED = "-primary-used-percent"


def windows_from_headers(
    headers: Mapping[str, str], now: float
) -> tuple[str | None, tuple[QuotaWindow, ...]]:
    """``(plan, windows)`` from a Codex response's ``x-codex-*`` headers (lower-case names).

    Read on every answer: only the ``x-*`` headers are decoded, and an answer without any builds
    nothing."""
    lowered = headers_with_prefix(headers, "x-")
    if not lowered:
        return None, ()
    plan = lowered.get("x-codex-plan-type")
    windows: list[QuotaWindow] = []
    for family, main in _families(lowered):
        keys = _CODEX_KEYS if main else _window_keys(family)
        for name, (used_key, minutes_key, reset_key, after_key) in keys:
            used = _number(lowered.get(used_key))
            minutes = _number(lowered.get(minutes_key))
            reset_at = _number(lowered.get(reset_key))
            if reset_at is None:
                after = _number(lowered.get(after_key))
                reset_at = now + after if after is not None else None
            if not (used or minutes or reset_at):  # a window counts only when it says something
                continue
            windows.append(
                QuotaWindow(
                    window=name if main else f"{family}:{name}",
                    used_percent=used,
                    window_seconds=int(minutes * 60) if minutes else None,
                    resets_at=reset_at,
                    limit_reached=used is not None and used >= 100,
                    main=main,
                )
            )
    return plan, tuple(windows)


# The raw names ``windows_from_headers`` reads: the plan and every family's window fields.
RELEVANT_HEADERS = re.compile(rb"(?i)x-(?:codex-plan-type$|.*-(?:primary|secondary)-)")
remembered_windows_from_headers = QuotaHeaderMemo(windows_from_headers, RELEVANT_HEADERS)


def _families(headers: Mapping[str, str]) -> list[tuple[str, bool]]:
    families = [("codex", True)]
    for key in headers:
        if key.endswith(_PRIMARY_USED):
            family = key[2 : -len(_PRIMARY_USED)]
            if family != "codex":
                families.append((family, False))
    return families


def windows_from_usage(payload: Mapping[str, Any], now: float) -> tuple[str | None, tuple[QuotaWindow, ...]]:
    """``(plan, windows)`` from a ``GET /wham/usage`` answer."""
    plan = payload.get("plan_type") if isinstance(payload.get("plan_type"), str) else None
    windows: list[QuotaWindow] = []
    windows.extend(_limit_windows(payload.get("rate_limit"), "", main=True, now=now))
    extra = payload.get("additional_rate_limits")
    if isinstance(extra, list):
        for item in extra:
            if isinstance(item, dict):
                name = str(item.get("limit_name") or item.get("metered_feature") or "additional")[:40]
                windows.extend(_limit_windows(item.get("rate_limit"), f"{name}:", main=False, now=now))
    return plan, tuple(windows)


def _limit_windows(limit: Any, prefix: str, *, main: bool, now: float) -> list[QuotaWindow]:
    if not isinstance(limit, dict):
        return []
    reached = limit.get("limit_reached") is True or limit.get("allowed") is False
    windows = []
    for name in _WINDOWS:
        window = limit.get(f"{name}_window")
        if not isinstance(window, dict):
            continue
        used = _float(window.get("used_percent"))
        reset_at = _float(window.get("reset_at"))
        if reset_at is None:
            after = _float(window.get("reset_after_seconds"))
            reset_at = now + after if after is not None else None
        seconds = _float(window.get("limit_window_seconds"))
        windows.append(
            QuotaWindow(
                window=prefix + name,
                used_percent=used,
                window_seconds=int(seconds) if seconds else None,
                resets_at=reset_at,
                limit_reached=reached or (used is not None and used >= 100),
                main=main,
            )
        )
    return windows


def windows_from_rate_limits_event(payload: Mapping[str, Any]) -> tuple[str | None, tuple[QuotaWindow, ...]]:
    """``(plan, windows)`` of a ``codex.rate_limits`` WebSocket event (PROTOCOLS §1.6)."""
    limits = payload.get("rate_limits")
    if not isinstance(limits, dict):
        return None, ()
    windows = []
    for name in _WINDOWS:
        window = limits.get(name)
        if not isinstance(window, dict):
            continue
        minutes = _float(window.get("window_minutes"))
        used = _float(window.get("used_percent"))
        windows.append(
            QuotaWindow(
                window=name,
                used_percent=used,
                window_seconds=int(minutes * 60) if minutes is not None else None,
                resets_at=_float(window.get("reset_at")),
                limit_reached=used is not None and used >= 100,
            )
        )
    plan = payload.get("plan_type")
    return (plan if isinstance(plan, str) else None), tuple(windows)
