"""The Google Gemini API (GEM-2), as the Gemini CLI and the ``google-genai`` SDK speak it.

``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent`` (SSE with ``alt=sse``,
else one JSON array streamed element by element) and ``:countTokens``; ``GET /v1beta/models`` and
``GET /v1beta/models/{model}``. The key comes in ``x-goog-api-key`` or as ``?key=``; errors use
Google's envelope. The same calls are served under ``/v1`` (the ``google-genai`` SDK's default API
version); there ``GET /v1/models[/{model}]`` answers in Gemini's shape to a caller that presents
its key the Google way, and in OpenAI's shape otherwise (``routes/_models.py``).
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import SubLaneError, UpstreamOperation, WireProtocol
from sublane_gateway._proxy import client_address
from sublane_gateway.pipeline import client_runtime, error_reply, listed_models, sublane_error_reply
from sublane_gateway.routes._http import headers_by_name, serve_http
from sublane_gateway.routes._replies import to_response

router = APIRouter(tags=["client: Google Gemini"])

GEMINI = WireProtocol.GEMINI
METHODS = ["generateContent", "streamGenerateContent", "countTokens"]


def gemini_headers(request: Request) -> dict[str, str]:
    """The request's headers (lower-case names), with a ``key=`` query parameter as ``x-goog-api-key``."""
    headers = headers_by_name(request)
    key = request.query_params.get("key")
    if key and "x-goog-api-key" not in headers:
        headers["x-goog-api-key"] = key
    return headers


async def _serve(
    request: Request, model: str, operation: UpstreamOperation, record_operation: str
) -> Response:
    json_array = operation is UpstreamOperation.STREAM and request.query_params.get("alt") != "sse"
    return await serve_http(
        request,
        GEMINI,
        operation=operation,
        record_protocol="gemini",
        record_operation=record_operation,
        headers=gemini_headers(request),
        path_model=model,
        json_array=json_array,
        query_keys=request.query_params.getlist("key"),
    )


@router.post("/v1beta/models/{model:path}:generateContent", response_model=None)
@router.post("/v1/models/{model:path}:generateContent", response_model=None)
async def generate_content(request: Request, model: str) -> Response:
    """One JSON answer."""
    return await _serve(request, model, UpstreamOperation.JSON, "generate")


@router.post("/v1beta/models/{model:path}:streamGenerateContent", response_model=None)
@router.post("/v1/models/{model:path}:streamGenerateContent", response_model=None)
async def stream_generate_content(request: Request, model: str) -> Response:
    """A stream: SSE with ``alt=sse``, else one JSON array."""
    return await _serve(request, model, UpstreamOperation.STREAM, "generate")


@router.post("/v1beta/models/{model:path}:countTokens", response_model=None)
@router.post("/v1/models/{model:path}:countTokens", response_model=None)
async def count_tokens(request: Request, model: str) -> Response:
    """Token counting on an account of the key's group."""
    return await _serve(request, model, UpstreamOperation.COUNT_TOKENS, "count_tokens")


def wants_gemini(request: Request) -> bool:
    """Whether a caller of a shared ``/v1/models`` route speaks Gemini (its key comes Google's way)."""
    return "x-goog-api-key" in request.headers or "key" in request.query_params


def _model_view(model: str) -> dict[str, object]:
    return {
        "name": f"models/{model}",
        "baseModelId": model,
        "version": "001",
        "displayName": model,
        "supportedGenerationMethods": METHODS,
    }


async def _catalogue(request: Request) -> dict[str, str] | Response:
    runtime = client_runtime(request)
    try:
        principal = await runtime.keys.authenticate(
            request.headers, request.query_params.getlist("key"), address=client_address(request)
        )
    except SubLaneError as error:
        return to_response(sublane_error_reply(GEMINI, error))
    return await listed_models(runtime, principal)


@router.get("/v1beta/models", response_model=None)
async def list_models(request: Request) -> Response:
    """The group's models in Gemini's shape (CAT-3)."""
    models = await _catalogue(request)
    if isinstance(models, Response):
        return models
    return JSONResponse({"models": [_model_view(model) for model in models]})


@router.get("/v1beta/models/{model:path}", response_model=None)
async def get_model(request: Request, model: str) -> Response:
    """One model of the group; 404 ``model_not_found`` when the group cannot reach it."""
    models = await _catalogue(request)
    if isinstance(models, Response):
        return models
    name = model.removeprefix("models/")
    if name not in models:
        return to_response(
            error_reply(GEMINI, 404, "model_not_found", f"No account in your group serves {name}.")
        )
    return JSONResponse(_model_view(name))
