"""The OpenAI API's rate-limit headers and error bodies, for API-key accounts (``_openai_api``).

Every answer carries ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (resets as durations:
``"1s"``, ``"6m0s"``, ``"20ms"``), read from the account's per-minute ``requests`` and ``tokens``
windows (``Simulator.set_quota``). Errors are ``{"error": {"message", "type", "param", "code"}}``;
a refused key's 401 names a masked part of the key, as the real API does.
"""

from __future__ import annotations

import math
from typing import Any

from ._accounts import Account
from ._script import Behaviour

__all__ = ["LIMITS", "api_error", "invalid_key", "openai_error", "rate_limit_headers"]

#: Per-minute limits of the simulated keys (a usage tier's RPM and TPM).
LIMITS = {"requests": 5000, "tokens": 2_000_000}
_LIMIT_NAMES = {"requests": "requests per min (RPM)", "tokens": "tokens per min (TPM)"}


def duration(seconds: float) -> str:
    """A reset as OpenAI writes it: ``"20ms"``, ``"17s"``, ``"6m0s"``."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    minutes, rest = divmod(math.ceil(seconds), 60)
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


def rate_limit_headers(account: Account, now: float) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, limit in LIMITS.items():
        window = account.quota.get(name)
        if window is None:
            continue
        window.roll(now)
        remaining = math.floor(limit * (100.0 - window.used_percent) / 100.0)
        headers[f"x-ratelimit-limit-{name}"] = str(limit)
        headers[f"x-ratelimit-remaining-{name}"] = str(max(0, remaining))
        headers[f"x-ratelimit-reset-{name}"] = duration(window.reset_at - now)
    return headers


def api_error(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def invalid_key(token: str | None) -> dict[str, Any]:
    """The 401 of a wrong or revoked key (the real message shows a masked part of the key)."""
    shown = f"{token[:6]}{'*' * 12}{token[-4:]}" if token and len(token) > 12 else "***"
    return api_error(
        f"Incorrect API key provided: {shown}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    )


def openai_error(
    behaviour: Behaviour, account: Account, model: str, now: float, quota_window: str | None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, body and extra headers for an ``error`` behaviour (or an exhausted window)."""
    status, code, message = behaviour.status, behaviour.error_code, behaviour.error_message
    headers: dict[str, str] = {}
    if behaviour.retry_after is not None:
        headers["retry-after"] = behaviour.retry_after
    if status == 429:
        if code == "insufficient_quota":
            return (
                status,
                api_error(
                    message
                    or "You exceeded your current quota, please check your plan and billing details. "
                    "For more information on this error, read the docs: "
                    "https://platform.openai.com/docs/guides/error-codes/api-errors.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                headers,
            )
        kind = quota_window or "requests"
        limit = LIMITS.get(kind, LIMITS["requests"])
        window = account.quota.get(kind)
        wait = duration(window.reset_at - now) if window is not None else "1s"
        text = (
            f"Rate limit reached for {model} in organization org-{account.organization_id[:24]} on "
            f"{_LIMIT_NAMES.get(kind, kind)}: Limit {limit}, Used {limit}, Requested 1. Please try "
            f"again in {wait}. Visit https://platform.openai.com/account/rate-limits to learn more."
        )
        return status, api_error(message or text, kind, code or "rate_limit_exceeded"), headers
    if status == 401:
        return status, invalid_key(None), headers
    if status == 403:
        text = "Country, region, or territory not supported"
        return (
            status,
            api_error(message or text, "request_forbidden", code or "unsupported_country_region_territory"),
            headers,
        )
    if status == 400:
        return status, api_error(message or "Bad request.", "invalid_request_error", code), headers
    if status == 503:
        text = "The server is overloaded or not ready yet."
        return status, api_error(message or text, "server_error", code or "server_is_overloaded"), headers
    text = "The server had an error while processing your request. Sorry about that!"
    return status, api_error(message or text, "server_error", code), headers
