"""``GET /v1/models``: the models the key's group can reach, without provider prefixes (AFF-6)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import SubLaneError, WireProtocol
from sublane_gateway._proxy import client_address
from sublane_gateway.pipeline import client_runtime, error_reply, listed_models, sublane_error_reply
from sublane_gateway.routes._gemini import get_model as gemini_get_model
from sublane_gateway.routes._gemini import list_models as gemini_list_models
from sublane_gateway.routes._gemini import wants_gemini
from sublane_gateway.routes._replies import to_response

router = APIRouter(tags=["client: models"])


@router.get("/v1/models", response_model=None)
async def list_models(request: Request) -> Response:
    """OpenAI's model list shape; ``owned_by`` names the provider (Gemini's for Gemini callers)."""
    if wants_gemini(request):
        return await gemini_list_models(request)
    runtime = client_runtime(request)
    try:
        principal = await runtime.keys.authenticate(request.headers, address=client_address(request))
    except SubLaneError as error:
        return to_response(sublane_error_reply(WireProtocol.RESPONSES, error))
    owners = await listed_models(runtime, principal)
    data = [
        {"id": model, "object": "model", "created": 0, "owned_by": owner} for model, owner in owners.items()
    ]
    return JSONResponse({"object": "list", "data": data})


@router.get("/v1/models/{model}", response_model=None)
async def get_model(request: Request, model: str) -> Response:
    """One model the group can reach (OpenAI's shape, or Gemini's for Gemini callers); 404 otherwise."""
    if wants_gemini(request):
        return await gemini_get_model(request, model)
    runtime = client_runtime(request)
    try:
        principal = await runtime.keys.authenticate(request.headers, address=client_address(request))
    except SubLaneError as error:
        return to_response(sublane_error_reply(WireProtocol.RESPONSES, error))
    owners = await listed_models(runtime, principal)
    if model not in owners:
        message = f"No account in your group serves {model}."
        return to_response(error_reply(WireProtocol.RESPONSES, 404, "model_not_found", message))
    return JSONResponse({"id": model, "object": "model", "created": 0, "owned_by": owners[model]})
