"""Claude subscription limits: `anthropic-ratelimit-unified-*` headers and `/api/oauth/usage`.

See PROTOCOLS.md 2.5 and 2.8.
"""

from __future__ import annotations

from typing import Any

from ._accounts import Account
from ._clock import iso_utc

__all__ = ["unified_headers", "usage_payload"]

_WINDOWS = (("five_hour", "5h"), ("seven_day", "7d"))


def _status(used_percent: float) -> str:
    if used_percent >= 100:
        return "rejected"
    if used_percent >= 80:
        return "allowed_warning"
    return "allowed"


def unified_headers(account: Account, now: float) -> dict[str, str]:
    """Utilization as a fraction 0–1 and resets as Unix seconds, per window and overall."""
    headers: dict[str, str] = {}
    worst: tuple[float, str, float] | None = None
    for name, short in _WINDOWS:
        window = account.quota.get(name)
        if window is None:
            continue
        window.roll(now)
        headers[f"anthropic-ratelimit-unified-{short}-status"] = _status(window.used_percent)
        headers[f"anthropic-ratelimit-unified-{short}-utilization"] = f"{window.used_percent / 100:.4g}"
        headers[f"anthropic-ratelimit-unified-{short}-reset"] = str(int(window.reset_at))
        if worst is None or window.used_percent > worst[0]:
            worst = (window.used_percent, name, window.reset_at)
    if worst is not None:
        headers["anthropic-ratelimit-unified-status"] = _status(worst[0])
        headers["anthropic-ratelimit-unified-reset"] = str(int(worst[2]))
        headers["anthropic-ratelimit-unified-representative-claim"] = worst[1]
    headers["anthropic-ratelimit-unified-fallback-percentage"] = "0.5"
    headers["anthropic-ratelimit-unified-overage-status"] = "rejected"
    headers["anthropic-ratelimit-unified-overage-disabled-reason"] = "org_level_disabled"
    return headers


def usage_payload(account: Account, now: float) -> dict[str, Any]:
    """Utilization as a percentage 0–100 and resets as ISO-8601."""
    payload: dict[str, Any] = {}
    for name, _ in _WINDOWS:
        window = account.quota.get(name)
        if window is None:
            payload[name] = None
            continue
        window.roll(now)
        payload[name] = {"utilization": float(window.used_percent), "resets_at": iso_utc(window.reset_at)}
    payload["seven_day_sonnet"] = None
    payload["seven_day_opus"] = None
    payload["seven_day_oauth_apps"] = None
    payload["extra_usage"] = {
        "is_enabled": False,
        "monthly_limit": None,
        "used_credits": None,
        "utilization": None,
    }
    return payload
