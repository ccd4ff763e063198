"""Classifying Anthropic error answers (PROTOCOLS §2.5) into what SubLane does about them.

Error bodies look like ``{"type": "error", "error": {"type": "rate_limit_error", "message": …}}``;
502/504 from the edge are HTML pages. A 429 is a subscription limit (QUOTA_EXHAUSTED) when the
unified rate-limit headers say a main window (5 h or 7 d) is rejected with a known reset; any other
429 (a short-term rate limit, long-context usage, a non-main window) is an account-wide rate limit
with the upstream ``Retry-After`` (COOL-1). ``overloaded_error`` (529) is transient capacity
trouble, "not your usage limit".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sublane_provider_claude._quota import rejected_main_windows
from sublane_providers import FailureKind, UpstreamFailure, parse_retry_after
from sublane_providers.kit import MAX_RETRY_AFTER_S, VERSION_IN_TEXT, header

QUOTA_CODE = "usage_limit_reached"
#: CLIENT-3: Anthropic's refusal of a Claude Code too old for a model: a 400 whose error ``type``
#: or ``code`` is this (``invalid_request_error`` with the code in ``error.code`` or the message is
#: taken too); the version asked for is read from the message when it names one.
VERSION_REFUSAL = "claude_code_version_too_old"
CLIENT_VERSION_CODE = "client_version_too_old"


def _version_refusal(error: Mapping[str, Any], message: str) -> bool:
    return VERSION_REFUSAL in (error.get("type"), error.get("code")) or VERSION_REFUSAL in message


def _error_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(payload, dict):
        return {}
    error = payload.get("error")
    if isinstance(error, dict):
        return error
    if isinstance(error, str):  # OAuth-style {"error": "...", "error_description": "..."}
        description = payload.get("error_description")
        return {"type": error, "message": description if isinstance(description, str) else error}
    return {}


def classify_failure(status: int, headers: Mapping[str, str], body: bytes, now: float) -> UpstreamFailure:
    """What an error answer of the Anthropic API means. Messages never include credentials."""
    error = _error_object(body)
    kind = error.get("type")
    code = (kind if isinstance(kind, str) and kind else f"http_{status}")[:64]
    text = error.get("message")
    message = (text if isinstance(text, str) and text else f"The upstream answered HTTP {status}.")[:500]
    retry_after = parse_retry_after(header(headers, "retry-after"), now)
    if status == 429:
        rejected = rejected_main_windows(headers, now)
        if rejected:
            # The subscription window is used up: a bounded re-check hint, at the latest of
            # Retry-After and the rejected windows' resets (the 7-day reset may be days away).
            reset = max(window.resets_at or now for window in rejected) - now
            hint = max(retry_after or 0.0, reset)
            bounded = min(max(hint, 1.0), MAX_RETRY_AFTER_S)
            return UpstreamFailure(FailureKind.QUOTA_EXHAUSTED, status, QUOTA_CODE, message, bounded)
        return UpstreamFailure(FailureKind.RATE_LIMITED, status, code, message, retry_after)
    if status == 401:
        return UpstreamFailure(FailureKind.UNAUTHORIZED, status, code, message)
    if status == 403:
        return UpstreamFailure(FailureKind.FORBIDDEN, status, code, message)
    if status == 408 or status >= 500:
        return UpstreamFailure(FailureKind.TRANSIENT, status, code, message, retry_after)
    if status == 400 and _version_refusal(error, message):
        found = VERSION_IN_TEXT.search(message)
        return UpstreamFailure(
            FailureKind.CLIENT_VERSION,
            status,
            CLIENT_VERSION_CODE,
            message,
            needed_version=found[1] if found else None,
        )
    return UpstreamFailure(FailureKind.CLIENT_ERROR, status, code, message)
