"""Errors in Google's envelope: ``{"error": {"code", "message", "status", "details"}}`` (GEM-2).

``code`` is the HTTP status as Google APIs send it, ``status`` the canonical gRPC name that the
``google-genai`` SDK reads; SubLane's stable code is in the message and in an ``ErrorInfo`` detail.
"""

from __future__ import annotations

from typing import Any

_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    431: "INVALID_ARGUMENT",
    499: "CANCELLED",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"


def google_status(status: int) -> str:
    """The canonical status name Google APIs pair with an HTTP status."""
    return _STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")


def google_error_body(
    status: int, code: str, message: str, request_id: str | None = None, param: str | None = None
) -> dict[str, Any]:
    info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": code, "domain": "sublane"}
    metadata = {key: value for key, value in (("request_id", request_id), ("field", param)) if value}
    if metadata:
        info["metadata"] = metadata
    return {
        "error": {
            "code": status,
            "message": f"{message} ({code})",
            "status": google_status(status),
            "details": [info],
        }
    }


def render_google_error(
    status: int, code: str, message: str, request_id: str | None, param: str | None
) -> dict[str, Any]:
    return google_error_body(status, code, message, request_id, param)
