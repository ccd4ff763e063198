"""``GET /v1/models``: the models the key's group can reach, without provider prefixes (AFF-6)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import SubLaneError, WireProtocol
from sublane_gateway.pipeline import client_runtime, sublane_error_reply
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
    await runtime.directory.refresh()
    owners: dict[str, str] = {}
    for account in runtime.directory.of_group(principal.group_id):
        if not account.enabled or not account.auth_ok:
            continue
        for model in await runtime.catalog.models_of(account.id, account.provider):
            owners.setdefault(model, account.provider)
    allowed = principal.model_policy
    data = [
        {"id": model, "object": "model", "created": 0, "owned_by": owner}
        for model, owner in sorted(owners.items())
        if allowed is None or model in allowed
    ]
    return JSONResponse({"object": "list", "data": data})
