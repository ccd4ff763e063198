"""Claude quota: ``anthropic-ratelimit-unified-*`` headers and ``GET /api/oauth/usage`` (PROTOCOLS §2.5, 2.8).

The two sources use different scales (headers: a fraction 0–1 and Unix seconds; the usage
endpoint: a percentage 0–100 and ISO-8601), and are normalized to the same windows, named as the
usage endpoint names them: ``five_hour`` and ``seven_day`` are the **main** subscription limit;
everything else (``seven_day_oi``, ``seven_day_sonnet``, ``seven_day_opus`` …) is reported but can
never exclude an account (QUOTA-4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sublane_core import signals
from sublane_providers.kit import QuotaHeaderMemo, headers_with_prefix, parse_timestamp

QuotaWindow = signals.QuotaWindow

HEADER_PREFIX = "anthropic-ratelimit-unified-"
MAIN_WINDOWS = ("five_hour", "seven_day")
_PERIOD_NAMES = {"5h": "five_hour", "7d": "seven_day"}
_PERIOD = re.compile(r"^(\d+)([hd])(?:[-_](.*))?$")
_UNIT_SECONDS = {"h": 3600, "d": 86400}
_WINDOW_FIELDS = frozenset({"status", "utilization", "reset"})
REJECTED = "rejected"


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if number == number else None  # NaN says nothing


def _window_name(family: str) -> str:
    """``5h`` → ``five_hour``, ``7d_oi`` → ``seven_day_oi``, ``7d-sonnet`` → ``seven_day_sonnet``."""
    match = _PERIOD.match(family)
    if match is None:
        return family.replace("-", "_")
    period = match.group(1) + match.group(2)
    base = _PERIOD_NAMES.get(period, period)
    rest = match.group(3)
    return f"{base}_{rest.replace('-', '_')}" if rest else base


def window_seconds(name: str) -> int | None:
    """The length of a window from its name (``five_hour``, ``seven_day…``, or ``<n>h``/``<n>d``)."""
    if name.startswith("five_hour"):
        return 5 * 3600
    if name.startswith("seven_day"):
        return 7 * 86400
    match = _PERIOD.match(name)
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)] if match else None


def windows_from_headers(
    headers: Mapping[str, str], now: float
) -> tuple[str | None, tuple[QuotaWindow, ...]]:
    """``(plan, windows)`` from a response's ``anthropic-ratelimit-unified-*`` headers.

    The headers carry no plan. A window counts only when it says something (status, utilization or
    reset). When the overall status is ``rejected`` and the binding window (the representative
    claim) sent no headers of its own, that window is reported as reached from the overall reset.
    """
    families: dict[str, dict[str, str]] = {}
    overall: dict[str, str] = {}
    for name, value in headers_with_prefix(headers, HEADER_PREFIX).items():
        rest = name[len(HEADER_PREFIX) :]
        if rest in ("status", "reset", "representative-claim"):
            overall[rest] = value.strip()
            continue
        family, _, field = rest.rpartition("-")
        if not family or field not in _WINDOW_FIELDS or family.startswith(("overage", "fallback")):
            continue
        families.setdefault(family, {})[field] = value.strip()
    windows: dict[str, QuotaWindow] = {}
    for family, fields in families.items():
        window = _window_name(family)
        utilization = _float(fields.get("utilization"))
        used = round(utilization * 100, 4) if utilization is not None else None
        resets_at = _float(fields.get("reset"))
        status = fields.get("status") or None
        if used is None and resets_at is None and status is None:
            continue
        windows[window] = QuotaWindow(
            window=window,
            used_percent=used,
            window_seconds=window_seconds(window),
            resets_at=resets_at,
            limit_reached=status == REJECTED or (used is not None and used >= 100),
            main=window in MAIN_WINDOWS,
        )
    claim = overall.get("representative-claim")
    if overall.get("status") == REJECTED and claim and claim not in windows:
        windows[claim] = QuotaWindow(
            window=claim,
            used_percent=None,
            window_seconds=window_seconds(claim),
            resets_at=_float(overall.get("reset")),
            limit_reached=True,
            main=claim in MAIN_WINDOWS,
        )
    return None, _ordered(windows)


def windows_from_usage(payload: Mapping[str, Any], now: float) -> tuple[str | None, tuple[QuotaWindow, ...]]:
    """``(plan, windows)`` from a ``GET /api/oauth/usage`` answer (no plan in it).

    ``null`` windows are skipped, as are windows with neither utilization nor reset;
    ``extra_usage`` (pay-as-you-go credits) is not a window.
    """
    windows: dict[str, QuotaWindow] = {}
    for name, value in payload.items():
        if name == "extra_usage" or not isinstance(value, Mapping):
            continue
        used = _float(value.get("utilization"))
        resets_at = parse_timestamp(value.get("resets_at"))
        if used is None and resets_at is None:
            continue
        window = str(name)[:40]
        windows[window] = QuotaWindow(
            window=window,
            used_percent=used,
            window_seconds=window_seconds(window),
            resets_at=resets_at,
            limit_reached=used is not None and used >= 100,
            main=window in MAIN_WINDOWS,
        )
    return None, _ordered(windows)


def _ordered(windows: dict[str, QuotaWindow]) -> tuple[QuotaWindow, ...]:
    main = [windows[name] for name in MAIN_WINDOWS if name in windows]
    other = [windows[name] for name in sorted(windows) if name not in MAIN_WINDOWS]
    return (*main, *other)


def rejected_main_windows(headers: Mapping[str, str], now: float) -> list[QuotaWindow]:
    """Main windows the headers report as reached, with a known reset (an exhausted subscription)."""
    _, windows = windows_from_headers(headers, now)
    return [w for w in windows if w.main and w.limit_reached and w.resets_at is not None]


remembered_windows_from_headers = QuotaHeaderMemo(
    windows_from_headers, re.compile(rb"(?i)" + re.escape(HEADER_PREFIX.encode()))
)
