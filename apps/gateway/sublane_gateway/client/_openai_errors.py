"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}`` (SPEC §14).

The ``code`` is SubLane's stable code (or the upstream's, for a relayed client error); ``type``
follows OpenAI's families so SDKs raise the matching exception class.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from sublane_core import SubLaneError
from sublane_gateway.client._error_headers import error_headers

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_error_type(status: int) -> str:
    """OpenAI's error ``type`` for an HTTP status."""
    return _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def openai_error_body(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": openai_error_type(status), "param": param, "code": code}}


def openai_error_response(
    status: int,
    code: str,
    message: str,
    *,
    request_id: str | None = None,
    retry_after: float | None = None,
    param: str | None = None,
) -> JSONResponse:
    """A JSON error response, with ``X-Request-ID`` and ``Retry-After`` when known."""
    headers = error_headers(request_id, retry_after)
    return JSONResponse(openai_error_body(status, code, message, param), status_code=status, headers=headers)


def from_sublane_error(error: SubLaneError, request_id: str | None = None) -> JSONResponse:
    """A :class:`SubLaneError` in OpenAI's shape."""
    return openai_error_response(
        error.status, error.code, error.message, request_id=request_id, retry_after=error.retry_after
    )
