"""Every error leaves as ``{"error": {"code", "message"}}`` (SPEC §14), never as a 500 page."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from sublane_core import ERROR_CATALOGUE, SubLaneError, WireProtocol
from sublane_gateway.pipeline import error_reply

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


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code = _STATUS_CODES.get(exc.status_code, "invalid_request")
    if exc.status_code == 405 and client_protocol_of(request.url.path) is WireProtocol.GEMINI:
        # Google's API has no 405: a method (``:nope``) or path it does not know is not found
        return _client_shaped(request, "not_found", "No such method or resource.", status=404) or (
            error_response("not_found")
        )
    response = _client_shaped(request, code, status=exc.status_code) or error_response(
        code, status=exc.status_code
    )
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


def client_protocol_of(path: str) -> WireProtocol | None:
    """The client protocol whose error shape an answer on ``path`` takes (``None``: not a model
    route): Google's under ``/v1beta/``, for ``/v1/models/{model}:method`` and for Code Assist's
    ``/v1internal:method``, Anthropic's on ``/v1/messages``, OpenAI's on the other ``/v1/`` routes.
    The bare prefixes (``/v1beta``, ``/v1``: a base URL called as it is) take their API's shape too."""
    if path.startswith(("/v1beta/", "/v1internal:", "/v1internal/")) or path == "/v1beta":
        return WireProtocol.GEMINI
    if path == "/v1":
        return WireProtocol.RESPONSES
    if not path.startswith("/v1/"):
        return None
    if path.startswith("/v1/messages"):
        return WireProtocol.MESSAGES
    if path.startswith("/v1/models/") and ":" in path.rpartition("/")[2]:
        return WireProtocol.GEMINI
    return WireProtocol.RESPONSES


def _client_shaped(
    request: Request, code: str, message: str | None = None, *, status: int | None = None
) -> Response | None:
    """``code`` in the error shape of the client protocol of the request's path; ``None`` outside
    the client API."""
    protocol = client_protocol_of(request.url.path)
    if protocol is None:
        return None
    spec = ERROR_CATALOGUE[code]
    reply = error_reply(protocol, status or spec.status, code, message or spec.message)
    return Response(
        reply.content, status_code=reply.status, headers=reply.headers, media_type="application/json"
    )


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    _log.error("unhandled error: %s", type(exc).__name__, exc_info=exc)
    return _client_shaped(request, "internal_error") or error_response("internal_error")


def install_error_handlers(app: FastAPI) -> None:
    """Render SubLane, validation, routing and unexpected errors in the one error shape."""
    app.add_exception_handler(SubLaneError, _sublane_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(OperationalError, _storage_error)
    app.add_exception_handler(OverflowError, _bad_input)
    app.add_exception_handler(RecursionError, _bad_input)
    app.add_exception_handler(Exception, _unexpected_error)
