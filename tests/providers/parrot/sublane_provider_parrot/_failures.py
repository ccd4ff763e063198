"""What the parrot upstream's error answers mean: ``{"error": {"code", "message"}}`` bodies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sublane_providers import FailureKind, UpstreamFailure, parse_retry_after
from sublane_providers.kit import header


def error_code(body: bytes) -> tuple[str | None, str | None]:
    """``(code, message)`` of an error body, ``(None, None)`` when it is not one."""
    try:
        payload: Any = json.loads(body)
    except ValueError:
        return None, None
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, str):  # an OAuth answer: {"error": "invalid_grant"}
        return error[:64], None
    if not isinstance(error, dict):
        return None, None
    code, message = error.get("code"), error.get("message")
    return (
        str(code)[:64] if isinstance(code, str) else None,
        str(message)[:500] if isinstance(message, str) else None,
    )


def classify_failure(status: int, headers: Mapping[str, str], body: bytes, now: float) -> UpstreamFailure:
    """An error answer of the parrot upstream, as SubLane treats it."""
    code, message = error_code(body)
    code = code or f"http_{status}"
    message = message or f"The upstream answered HTTP {status}."
    retry_after = parse_retry_after(header(headers, "retry-after"), now)
    kind = {
        429: FailureKind.RATE_LIMITED,
        401: FailureKind.UNAUTHORIZED,
        403: FailureKind.FORBIDDEN,
        408: FailureKind.TRANSIENT,
    }.get(status, FailureKind.TRANSIENT if status >= 500 else FailureKind.CLIENT_ERROR)
    if kind not in (FailureKind.RATE_LIMITED, FailureKind.TRANSIENT):
        retry_after = None
    return UpstreamFailure(kind, status, code, message, retry_after)
