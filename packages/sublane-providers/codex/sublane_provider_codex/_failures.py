"""Classifying Codex error answers (PROTOCOLS §1.5) into what SubLane does about them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sublane_providers import FailureKind, UpstreamFailure, parse_retry_after
from sublane_providers.kit import MAX_RETRY_AFTER_S, VERSION_IN_TEXT, header


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
    if isinstance(payload.get("detail"), str):  # FastAPI-style {"detail": "..."}
        return {"message": payload["detail"]}
    if isinstance(error, str):
        return {"code": error, "message": payload.get("error_description") or error}
    return {}


def _reset_seconds(error: Mapping[str, Any], now: float) -> float | None:
    resets_at = error.get("resets_at")
    if isinstance(resets_at, int | float) and not isinstance(resets_at, bool):
        return float(resets_at) - now
    resets_in = error.get("resets_in_seconds")
    if isinstance(resets_in, int | float) and not isinstance(resets_in, bool):
        return float(resets_in)
    return None


#: CLIENT-3: what the backend answers (400) when a model needs a newer client than the call's
#: ``version`` says: "The 'MODEL' model requires a newer version of Codex. Please upgrade …".
_VERSION_REFUSAL = re.compile(r"requires a newer version of codex", re.IGNORECASE)
CLIENT_VERSION_CODE = "client_version_too_old"


def classify_failure(status: int, headers: Mapping[str, str], body: bytes, now: float) -> UpstreamFailure:
    """What an error answer of the Codex backend means. Messages never include credentials."""
    error = _error_object(body)
    code = str(error.get("code") or error.get("type") or f"http_{status}")[:64]
    message = str(error.get("message") or f"The upstream answered HTTP {status}.")[:500]
    if status == 429:
        if error.get("type") == "usage_not_included":
            return UpstreamFailure(FailureKind.FORBIDDEN, status, "usage_not_included", message)
        if error.get("type") == "usage_limit_reached":
            # Retry-After is not reliably sent here; synthesize a bounded one from the reset.
            retry_after = parse_retry_after(header(headers, "retry-after"), now)
            reset = _reset_seconds(error, now)
            if retry_after is None and reset is not None:
                retry_after = min(max(reset, 1.0), MAX_RETRY_AFTER_S)
            return UpstreamFailure(
                FailureKind.QUOTA_EXHAUSTED, status, "usage_limit_reached", message, retry_after
            )
        retry_after = parse_retry_after(header(headers, "retry-after"), now)
        return UpstreamFailure(FailureKind.RATE_LIMITED, status, code, message, retry_after)
    if status == 401:
        return UpstreamFailure(FailureKind.UNAUTHORIZED, status, code, message)
    if status == 403:
        return UpstreamFailure(FailureKind.FORBIDDEN, status, code, message)
    if status == 408 or status >= 500:
        retry_after = parse_retry_after(header(headers, "retry-after"), now)
        return UpstreamFailure(FailureKind.TRANSIENT, status, code, message, retry_after)
    if status == 400 and _VERSION_REFUSAL.search(message):
        found = VERSION_IN_TEXT.search(message)  # the backend names no version today
        needed = found[1] if found else None
        return UpstreamFailure(
            FailureKind.CLIENT_VERSION, status, CLIENT_VERSION_CODE, message, needed_version=needed
        )
    return UpstreamFailure(FailureKind.CLIENT_ERROR, status, code, message)
