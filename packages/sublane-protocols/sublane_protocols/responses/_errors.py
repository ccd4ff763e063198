"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}`` (Responses and Chat).

The ``code`` is SubLane's stable code (or the upstream's, for a relayed client error); ``type``
follows OpenAI's families so SDKs raise the matching exception class.
"""

from __future__ import annotations

from typing import Any

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


def render_openai_error(
    status: int, code: str, message: str, _request_id: str | None, param: str | None
) -> dict[str, Any]:
    return openai_error_body(status, code, message, param)
