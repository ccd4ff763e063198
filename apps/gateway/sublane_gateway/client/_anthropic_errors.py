"""Errors in Anthropic's shape: ``{"type": "error", "error": {"type", "message", "code"}, "request_id"}``.

``type`` follows Anthropic's families so SDKs raise the matching exception class; ``code`` carries
SubLane's stable code (SPEC §14).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from sublane_gateway.client._error_headers import error_headers

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


def anthropic_error_response(
    status: int,
    code: str,
    message: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
    param: str | None = None,
) -> JSONResponse:
    """A JSON error response with ``X-Request-ID`` and ``Retry-After`` when known."""
    headers = error_headers(request_id, retry_after, anthropic=True)
    return JSONResponse(
        anthropic_error_body(status, code, message, request_id), status_code=status, headers=headers
    )
