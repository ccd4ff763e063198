"""``POST /v1/responses`` (JSON and SSE) and ``POST /v1/responses/compact``, served by Codex accounts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import SubLaneError
from sublane_gateway.client._calls import open_or_refuse, prepare_call, relay_json, streaming_response
from sublane_gateway.client._codex_calls import codex_upstream, collect_final, stream_failure_response
from sublane_gateway.client._openai_errors import from_sublane_error, openai_error_response
from sublane_providers.codex import CodexStreamObserver, usage_of

router = APIRouter(tags=["client: OpenAI Responses"])

CODEX = ("codex",)  # Responses are served by Codex accounts


@router.post("/v1/responses", response_model=None)
async def create_response(request: Request) -> Response:
    """OpenAI Responses as the Codex CLI speaks it: SSE when ``stream`` is true, else one JSON object."""
    try:
        runtime, principal, body, call, _provider = await prepare_call(
            request, "responses", "responses", CODEX
        )
    except SubLaneError as error:
        return from_sublane_error(error)
    upstream = codex_upstream(request, body, call.model)
    response = await open_or_refuse(runtime, call, principal, upstream, openai_error_response)
    if isinstance(response, Response):
        return response
    if body.get("stream") is True:
        return streaming_response(runtime, call, response, CodexStreamObserver(call.state))
    final = await collect_final(call, response, call.started + runtime.settings.request_timeout_s)
    if final is None:
        return stream_failure_response(call)
    return JSONResponse(final, headers={"x-request-id": call.request_id})


@router.post("/v1/responses/compact", response_model=None)
async def compact_response(request: Request) -> Response:
    """Remote compaction: plain JSON in, plain JSON out, on a Codex account."""
    try:
        runtime, principal, body, call, _provider = await prepare_call(request, "responses", "compact", CODEX)
    except SubLaneError as error:
        return from_sublane_error(error)
    upstream = codex_upstream(request, body, call.model, compact=True)
    response = await open_or_refuse(runtime, call, principal, upstream, openai_error_response)
    if isinstance(response, Response):
        return response

    def observe(payload: dict[str, Any]) -> None:
        call.state.usage = usage_of(payload)

    return await relay_json(call, response, openai_error_response, observe)
