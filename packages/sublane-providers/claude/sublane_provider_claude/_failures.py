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
import re
from collections.abc import Mapping
from typing import Any

from sublane_provider_claude._quota import rejected_main_windows
from sublane_providers import FailureKind, UpstreamFailure, parse_retry_after
from sublane_providers.kit import MAX_RETRY_AFTER_S, VERSION_IN_TEXT, header

QUOTA_CODE = "usage_limit_reached"
#: CLIENT-3: Anthropic's refusal of a Claude Code too old for a model, as Claude Code 2.1.332 itself
#: recognizes it: a 400 whose ``error.details.error_code`` is this, or whose message says "Claude
#: Code X does not support this model; version Y or newer is required" (or names an organization's
#: minimum). The type or a ``code`` field holding it is taken too.
VERSION_REFUSAL = "claude_code_version_too_old"
CLIENT_VERSION_CODE = "client_version_too_old"
_VERSION_MESSAGE = re.compile(
    r"\bClaude Code \S+ (?:does not support this model; version (\S+) or newer is required"
    r"|is older than the minimum version required by your organization's policy"
    r"|or later is required for your organization)"
)


def _version_refusal(error: Mapping[str, Any], message: str) -> tuple[bool, str | None]:
    """Whether the error is a version refusal, and the version it asks for when it names one."""
    found = _VERSION_MESSAGE.search(message)
    details = error.get("details")
    code = details.get("error_code") if isinstance(details, dict) else None
    refused = VERSION_REFUSAL in (code, error.get("type"), error.get("code")) or found is not None
    needed = found[1] if found is not None and found[1] else None
    if refused and needed is None:
        loose = VERSION_IN_TEXT.search(message)
        needed = loose[1] if loose else None
    return refused, needed


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
    refused, needed = _version_refusal(error, message) if status == 400 else (False, None)
    if refused:
        return UpstreamFailure(
            FailureKind.CLIENT_VERSION, status, CLIENT_VERSION_CODE, message, needed_version=needed
        )
    return UpstreamFailure(FailureKind.CLIENT_ERROR, status, code, message)
