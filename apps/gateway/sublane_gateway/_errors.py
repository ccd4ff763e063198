"""Every error leaves as ``{"error": {"code", "message"}}`` (SPEC §14), never as a 500 page."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from sublane_core import ERROR_CATALOGUE, SubLaneError

_log = logging.getLogger("sublane.gateway")

_STATUS_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


def error_response(code: str, message: str | None = None, *, status: int | None = None) -> JSONResponse:
    """A JSON error response for a catalogued ``code``."""
    spec = ERROR_CATALOGUE[code]
    return JSONResponse(
        {"error": {"code": code, "message": message or spec.message}}, status_code=status or spec.status
    )


def _describe_validation(errors: list[dict[str, Any]]) -> str:
    parts = []
    for error in errors[:3]:
        location = ".".join(str(item) for item in error.get("loc", ()) if item not in ("body",))
        parts.append(f"{location or 'body'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


async def _sublane_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SubLaneError)
    response = error_response(exc.code, exc.message, status=exc.status)
    response.headers.update(exc.headers)
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return response


async def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(error.get("type") == "json_invalid" for error in errors):
        return error_response("invalid_json")
    return error_response("invalid_request", _describe_validation(errors))


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code = _STATUS_CODES.get(exc.status_code, "invalid_request")
    response = error_response(code, status=exc.status_code)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    _log.error("unhandled error: %s", type(exc).__name__, exc_info=exc)
    if request.url.path.startswith("/v1/"):  # client API: OpenAI's error shape
        spec = ERROR_CATALOGUE["internal_error"]
        body = {
            "error": {
                "message": spec.message,
                "type": "server_error",
                "param": None,
                "code": "internal_error",
            }
        }
        return JSONResponse(body, status_code=500)
    return error_response("internal_error")


def install_error_handlers(app: FastAPI) -> None:
    """Render SubLane, validation, routing and unexpected errors in the one error shape."""
    app.add_exception_handler(SubLaneError, _sublane_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected_error)
