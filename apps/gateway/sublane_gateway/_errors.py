"""Every error leaves as ``{"error": {"code", "message"}}`` (SPEC §14), never as a 500 page."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import OperationalError
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


async def _storage_error(request: Request, exc: Exception) -> Response:
    """OPS-2: a busy or failing database is a 503 ``storage_unavailable`` (its transaction rolled back)."""
    _log.warning("storage unavailable on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    response = _client_shaped(request, "storage_unavailable") or error_response("storage_unavailable")
    response.headers["Retry-After"] = "1"
    return response


async def _bad_input(request: Request, exc: Exception) -> Response:
    """OPS-1 safety net: input no route checked (a number beyond 64 bits, nesting beyond the stack)."""
    _log.info("refused input on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return _client_shaped(request, "invalid_request") or error_response("invalid_request")


def _client_shaped(request: Request, code: str) -> JSONResponse | None:
    """The client API's (OpenAI) error shape for ``code`` on ``/v1/*``; ``None`` elsewhere."""
    if not request.url.path.startswith(("/v1/", "/v1beta/")):
        return None
    spec = ERROR_CATALOGUE[code]
    kind = "server_error" if spec.status >= 500 else "invalid_request_error"
    body = {"error": {"message": spec.message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=spec.status)


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
    app.add_exception_handler(OperationalError, _storage_error)
    app.add_exception_handler(OverflowError, _bad_input)
    app.add_exception_handler(RecursionError, _bad_input)
    app.add_exception_handler(Exception, _unexpected_error)
