"""``GET /v1/models``: the models the key's group can reach, without provider prefixes (AFF-6)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import SubLaneError, WireProtocol
from sublane_gateway.pipeline import client_runtime, group_models, sublane_error_reply
from sublane_gateway.routes._http import to_response

router = APIRouter(tags=["client: models"])


@router.get("/v1/models", response_model=None)
async def list_models(request: Request) -> Response:
    """OpenAI's model list shape; ``owned_by`` names the provider."""
    runtime = client_runtime(request)
    try:
        principal = await runtime.keys.authenticate(request.headers)
    except SubLaneError as error:
        return to_response(sublane_error_reply(WireProtocol.RESPONSES, error))
    owners = await group_models(runtime, principal)
    data = [
        {"id": model, "object": "model", "created": 0, "owned_by": owner} for model, owner in owners.items()
    ]
    return JSONResponse({"object": "list", "data": data})
