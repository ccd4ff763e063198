"""Google Code Assist, ``v1internal`` (CLIENT-6): the Gemini CLI in Google sign-in mode
(``CODE_ASSIST_ENDPOINT``) and the Antigravity clients (``CLOUD_CODE_URL``) pointed at SubLane.

``POST /v1internal:{method}`` with the SubLane key as the bearer token. The model methods
(``generateContent``, ``streamGenerateContent`` — always SSE, as the clients ask with ``alt=sse`` —
and ``countTokens``) are Gemini calls in an envelope: :mod:`sublane_protocols.code_assist` takes the
Gemini request out, the pipeline serves it as the Gemini API route does (every provider, through
the hub), and the answer goes back in ``{"response": …}``, event by event for a stream. The set-up
methods (``loadCodeAssist``, ``onboardUser``) give the key a current tier and a stable project; the
quota reads (``retrieveUserQuota``, ``fetchAvailableModels``) answer the key's pool (POOL-1); the
other reads and the metrics the clients send answer empty. Errors are Google's RPC envelope; an
unknown method is 404 ``NOT_FOUND``. See docs/code-assist.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from sublane_core import SubLaneError, UpstreamOperation, WireProtocol
from sublane_gateway._proxy import client_address
from sublane_gateway.management._pool import group_pool
from sublane_gateway.pipeline import (
    CallSpec,
    JsonReply,
    Principal,
    Reply,
    StreamReply,
    client_runtime,
    error_reply,
    group_models,
    json_reply,
    listed_models,
    serve_call,
    sublane_error_reply,
)
from sublane_gateway.routes._bodies import read_json_object
from sublane_gateway.routes._http import headers_by_name
from sublane_gateway.routes._replies import to_response
from sublane_protocols import code_assist
from sublane_protocols.code_assist import ModelRoom

router = APIRouter(tags=["client: Google Code Assist"])

GEMINI = WireProtocol.GEMINI  # the error shape: Google's RPC envelope
_MODEL_METHODS = frozenset({code_assist.GENERATE, code_assist.STREAM, code_assist.COUNT})


async def _principal(request: Request) -> Principal:
    runtime = client_runtime(request)
    return await runtime.keys.authenticate(request.scope["headers"], address=client_address(request))


def _not_found(method: str) -> Response:
    return to_response(
        error_reply(GEMINI, 404, "not_found", f"SubLane does not serve the Code Assist method {method!r}.")
    )


@router.post("/v1internal:{method}", response_model=None)
async def code_assist_call(request: Request, method: str) -> Response:
    """One Code Assist method: a model call, a set-up step or a read."""
    runtime = client_runtime(request)
    arrived = (runtime.clock.monotonic(), runtime.clock.time())  # the record's clock (HIST-5)
    headers = headers_by_name(request)
    try:
        principal = await _principal(request)
        body, _raw = await read_json_object(request, headers)
        if method in _MODEL_METHODS:
            call = (
                code_assist.count_call(body)
                if method == code_assist.COUNT
                else code_assist.generate_call(body)
            )
        else:
            return await _other(request, principal, method)
    except SubLaneError as error:
        return to_response(sublane_error_reply(GEMINI, error))
    if call.session is not None:
        headers["session_id"] = call.session  # the Gemini intent's conversation key (AFF)
    operation = {
        code_assist.GENERATE: UpstreamOperation.JSON,
        code_assist.STREAM: UpstreamOperation.STREAM,
        code_assist.COUNT: UpstreamOperation.COUNT_TOKENS,
    }[method]
    spec = CallSpec(
        protocol=GEMINI,
        body=call.body,
        headers=headers,
        operation=operation,
        record_protocol="code_assist",
        record_operation="count_tokens" if method == code_assist.COUNT else "generate",
        path_model=call.model,
        arrived=arrived,
    )
    reply = await serve_call(runtime, principal, spec)
    return to_response(reply if method == code_assist.COUNT else _enveloped(reply))


def _enveloped(reply: Reply) -> Reply:
    """The Gemini answer in Code Assist's envelope (errors as they are: Google's RPC shape)."""
    if isinstance(reply, StreamReply):
        return dataclasses.replace(reply, chunks=_enveloped_stream(reply.chunks))
    if reply.status != 200:
        return reply
    return JsonReply(reply.status, code_assist.enveloped_json(reply.content), reply.headers)


async def _enveloped_stream(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The relay's SSE chunks, each event enveloped; closing this closes the relay (which finishes
    the call)."""
    stream = code_assist.EnvelopedStream()
    try:
        async for chunk in chunks:
            out = stream.feed(chunk)
            if out:
                yield out
        rest = stream.rest()
        if rest:
            yield rest
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def _other(request: Request, principal: Principal, method: str) -> Response:
    """The set-up methods and the reads."""
    project = code_assist.key_project(principal.key_id)
    if method == "loadCodeAssist":
        return to_response(json_reply(code_assist.load_code_assist_answer(project)))
    if method == "onboardUser":
        return to_response(json_reply(code_assist.onboard_answer(project)))
    if method in ("retrieveUserQuota", "fetchAvailableModels"):
        rooms = await _rooms(request, principal)
        answer = (
            code_assist.user_quota_answer(rooms)
            if method == "retrieveUserQuota"
            else code_assist.available_models_answer(rooms)
        )
        return to_response(json_reply(answer))
    empty = code_assist.EMPTY_ANSWERS.get(method)
    if empty is not None:
        return to_response(json_reply(empty))
    return _not_found(method)


@router.get("/v1internal:{method}", response_model=None)
async def code_assist_read(request: Request, method: str) -> Response:
    """The reads the clients make with ``GET`` (``getCodeAssistGlobalUserSetting``)."""
    try:
        await _principal(request)
    except SubLaneError as error:
        return to_response(sublane_error_reply(GEMINI, error))
    empty = code_assist.EMPTY_ANSWERS.get(method) if method.startswith("get") else None
    return _not_found(method) if empty is None else to_response(json_reply(empty))


@router.get("/v1internal/{name:path}", response_model=None)
async def code_assist_operation(request: Request, name: str) -> Response:
    """A long-running operation: only ``:onboardUser``'s, already done."""
    try:
        principal = await _principal(request)
    except SubLaneError as error:
        return to_response(sublane_error_reply(GEMINI, error))
    if name != code_assist.ONBOARD_OPERATION:
        return _not_found(name)
    return to_response(json_reply(code_assist.onboard_answer(code_assist.key_project(principal.key_id))))


async def _rooms(request: Request, principal: Principal) -> dict[str, ModelRoom]:
    """Each model of the key's group (aliases included) with what is left of it in the pool
    (POOL-1): the fullest of its providers' answers; by provider, the window named after the model
    (an alias: its target; Antigravity's quota is per model) or else the most used of the
    provider's other windows."""
    runtime = client_runtime(request)
    models = await listed_models(runtime, principal)
    own = await group_models(runtime, principal)  # a name the accounts list wins over an alias
    aliases = await runtime.aliases.of_group(principal.group_id)
    pool = await group_pool(request, principal.user_id, principal.group_id)
    by_provider = {str(item["provider"]): item for item in pool}
    rooms = {}
    for model, owner in models.items():
        target = model if model in own else aliases.get(model, model)
        items = [by_provider[owner]] if owner in by_provider else list(by_provider.values())
        found = [_room(item, target, models) for item in items]
        known = [room for room in found if room.remaining_fraction is not None]
        rooms[model] = (
            max(known, key=lambda room: room.remaining_fraction or 0.0) if known else ModelRoom(None, None)
        )
    return rooms


def _room(item: Mapping[str, Any], model: str, models: Mapping[str, str]) -> ModelRoom:
    windows: list[Mapping[str, Any]] = list(item["windows"])
    own = [window for window in windows if window["window"] == model]
    candidates = own or [window for window in windows if window["window"] not in models]
    used = [window for window in candidates if window["mean_used_percent"] is not None]
    if not item["accounts_usable"]:
        resets = [window["soonest_reset_at"] for window in candidates if window["soonest_reset_at"]]
        return ModelRoom(0.0, min(resets) if resets else None)
    if not used:
        return ModelRoom(None, None)
    fullest = max(used, key=lambda window: float(window["mean_used_percent"]))
    remaining = max(0.0, min(1.0, 1.0 - float(fullest["mean_used_percent"]) / 100.0))
    return ModelRoom(remaining, fullest["soonest_reset_at"])
