"""``POST /v1/messages`` and ``/v1/messages/count_tokens``: Anthropic Messages, as Claude Code speaks it,
served by pooled Claude Pro/Max accounts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import httpx
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from sublane_core import SubLaneError
from sublane_gateway.client._anthropic_errors import anthropic_error_response
from sublane_gateway.client._call import ModelCall
from sublane_gateway.client._calls import (
    Upstream,
    open_or_refuse,
    prepare_call,
    relay_json,
    streaming_response,
)
from sublane_providers import ProviderAdapter
from sublane_providers.claude import ClaudeAdapter, ClaudeStreamObserver

router = APIRouter(tags=["client: Anthropic Messages"])

CLAUDE = ("claude",)
_LEGACY_SESSION = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


def claude_conversation_key(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """AFF-1 for Anthropic clients: ``X-Claude-Code-Session-Id``, else the session in ``metadata.user_id``.

    Claude Code 2.x sends ``user_id`` as a JSON string holding ``session_id``; older versions end
    it with ``_session_<uuid>``.
    """
    header = headers.get("x-claude-code-session-id")
    if header:
        return header[:256]
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str) or not user_id:
        return None
    try:
        parsed = json.loads(user_id)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("session_id"), str) and parsed["session_id"]:
        return str(parsed["session_id"])[:256]
    match = _LEGACY_SESSION.search(user_id)
    return match.group(1) if match else None


def _claude_upstream(request: Request, body: dict[str, Any], model: str, kind: str) -> Upstream:
    client_headers = dict(request.headers)
    prepared = dict(body, model=model)

    def build(adapter: ProviderAdapter, bundle: Mapping[str, Any], bound: bool) -> httpx.Request:
        assert isinstance(adapter, ClaudeAdapter)
        if kind == "count_tokens":
            return adapter.count_tokens_request(bundle, prepared, client_headers)
        if kind == "stream":
            return adapter.stream_request(bundle, prepared, client_headers, bound=bound)
        return adapter.json_request(bundle, prepared, client_headers, bound=bound)

    return Upstream(
        provider="claude",
        conversation_key=claude_conversation_key(request.headers, body),
        continuation=False,
        build=build,
    )


async def _json_answer(call: ModelCall, response: httpx.Response, *, counts_tokens: bool) -> Response:
    """Relay a JSON answer (non-streaming message or token count) and finish the call."""
    observe = None if counts_tokens else ClaudeStreamObserver(call.state).observe_message
    return await relay_json(
        call, response, anthropic_error_response, observe, headers={"request-id": call.request_id}
    )


@router.post("/v1/messages", response_model=None)
async def create_message(request: Request) -> Response:
    """Messages, streamed (``stream: true``) or not; ``?beta=true`` is accepted as Claude Code sends it."""
    try:
        runtime, principal, body, call, _provider = await prepare_call(
            request, "messages", "messages", CLAUDE
        )
    except SubLaneError as error:
        return anthropic_error_response(
            error.status, error.code, error.message, retry_after=error.retry_after
        )
    stream = body.get("stream") is True
    upstream = _claude_upstream(request, body, call.model, "stream" if stream else "json")
    response = await open_or_refuse(runtime, call, principal, upstream, anthropic_error_response)
    if isinstance(response, Response):
        return response
    if stream:
        return streaming_response(runtime, call, response, ClaudeStreamObserver(call.state))
    return await _json_answer(call, response, counts_tokens=False)


@router.post("/v1/messages/count_tokens", response_model=None)
async def count_tokens(request: Request) -> Response:
    """Token counting on a Claude account of the key's group (the conversation's, when bound)."""
    try:
        runtime, principal, body, call, _provider = await prepare_call(
            request, "messages", "count_tokens", CLAUDE
        )
    except SubLaneError as error:
        return anthropic_error_response(
            error.status, error.code, error.message, retry_after=error.retry_after
        )
    upstream = _claude_upstream(request, body, call.model, "count_tokens")
    response = await open_or_refuse(runtime, call, principal, upstream, anthropic_error_response)
    if isinstance(response, Response):
        return response
    return await _json_answer(call, response, counts_tokens=True)
