"""``POST /v1/responses`` (JSON and SSE) and ``POST /v1/responses/compact``, served by Codex accounts."""

from __future__ import annotations

import json

import httpx
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from sublane_core import SubLaneError
from sublane_gateway.client._codex_calls import (
    SSE_HEADERS,
    collect_final,
    finish_call,
    open_codex,
    prepare_call,
    refusal_response,
    stream_failure_response,
)
from sublane_gateway.client._dispatch import UpstreamRefused, check_policy
from sublane_gateway.client._openai_errors import from_sublane_error, openai_error_response
from sublane_gateway.client._relay import relay_sse
from sublane_providers import Outcome
from sublane_providers.codex import CodexStreamObserver, usage_of

router = APIRouter(tags=["client: OpenAI Responses"])


@router.post("/v1/responses", response_model=None)
async def create_response(request: Request) -> Response:
    """OpenAI Responses as the Codex CLI speaks it: SSE when ``stream`` is true, else one JSON object."""
    try:
        runtime, principal, body, call = await prepare_call(request, "responses", "responses")
    except SubLaneError as error:
        return from_sublane_error(error)
    try:
        check_policy(principal, call.model)
        response = await open_codex(
            runtime, request, call, principal, body, url=runtime.codex.responses_url, compact=False
        )
    except (SubLaneError, UpstreamRefused) as error:
        return refusal_response(runtime, call, error)
    except BaseException:
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    headers = {"x-request-id": call.request_id}
    if body.get("stream") is True:
        observer = CodexStreamObserver(call.state)
        stream = relay_sse(
            call,
            response,
            observer,
            heartbeat_s=runtime.settings.sse_heartbeat_s,
            idle_timeout_s=runtime.settings.stream_idle_timeout_s,
            on_end=finish_call,
            deadline=call.started + runtime.settings.request_timeout_s,
        )
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers | SSE_HEADERS)
    final = await collect_final(call, response, call.started + runtime.settings.request_timeout_s)
    if final is None:
        return stream_failure_response(call)
    return JSONResponse(final, headers=headers)


@router.post("/v1/responses/compact", response_model=None)
async def compact_response(request: Request) -> Response:
    """Remote compaction: plain JSON in, plain JSON out, on a Codex account."""
    try:
        runtime, principal, body, call = await prepare_call(request, "responses", "compact")
    except SubLaneError as error:
        return from_sublane_error(error)
    try:
        check_policy(principal, call.model)
        response = await open_codex(
            runtime, request, call, principal, body, url=runtime.codex.compact_url, compact=True
        )
    except (SubLaneError, UpstreamRefused) as error:
        return refusal_response(runtime, call, error)
    except BaseException:
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    try:
        content = await response.aread()
    except httpx.HTTPError:
        await response.aclose()
        call.finish(Outcome.ERROR, "upstream_stream_error")
        return openai_error_response(
            502, "upstream_stream_error", "The compaction answer broke off.", request_id=call.request_id
        )
    except BaseException:
        await response.aclose()
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    await response.aclose()
    try:
        payload = json.loads(content)
    except ValueError:
        payload = None
    call.state.usage = usage_of(payload) if isinstance(payload, dict) else None
    call.finish(Outcome.SUCCESS)
    return Response(content, media_type="application/json", headers={"x-request-id": call.request_id})
