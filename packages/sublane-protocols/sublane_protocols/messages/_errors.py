"""Errors in Anthropic's shape: ``{"type": "error", "error": {"type", "message", "code"}, "request_id"}``.

``type`` follows Anthropic's families so SDKs raise the matching exception class; ``code`` carries
SubLane's stable code (SPEC §14). Anthropic also repeats the request ID in a ``request-id`` header.
"""

from __future__ import annotations

from typing import Any

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def anthropic_error_type(status: int) -> str:
    """Anthropic's error ``type`` for an HTTP status."""
    return _TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def anthropic_error_body(
    status: int, code: str, message: str, request_id: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "error",
        "error": {"type": anthropic_error_type(status), "message": message, "code": code},
    }
    if request_id:
        body["request_id"] = request_id
    return body


def render_anthropic_error(
    status: int, code: str, message: str, request_id: str | None, _param: str | None
) -> dict[str, Any]:
    return anthropic_error_body(status, code, message, request_id)
