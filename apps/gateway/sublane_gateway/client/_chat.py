"""``POST /v1/chat/completions``: OpenAI Chat Completions, translated to and from Codex Responses."""

from __future__ import annotations

import json
import secrets
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import SubLaneError
from sublane_gateway.client._call import ModelCall
from sublane_gateway.client._calls import open_or_refuse, prepare_call, streaming_response
from sublane_gateway.client._codex_calls import codex_upstream, collect_final, stream_failure_response
from sublane_gateway.client._openai_errors import from_sublane_error, openai_error_body, openai_error_response
from sublane_providers import parse_event
from sublane_providers.codex import (
    ChatRequestError,
    ChatStreamTranslator,
    CodexStreamObserver,
    chat_to_responses,
    responses_to_chat_completion,
)

router = APIRouter(tags=["client: OpenAI Chat Completions"])

DONE = b"data: [DONE]\n\n"


def _data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class _ChunkStream:
    """Turns upstream Responses events into ``chat.completion.chunk`` frames."""

    def __init__(self, call: ModelCall, translator: ChatStreamTranslator) -> None:
        self._call = call
        self._translator = translator
        self._error_sent = False

    def __call__(self, blocks: list[bytes]) -> bytes:
        out: list[bytes] = []
        for block in blocks:
            event = parse_event(block)
            if event.data is None:
                continue
            try:
                payload = json.loads(event.data)
            except ValueError:
                continue
            if not isinstance(payload, dict):
                continue
            out.extend(_data(chunk) for chunk in self._translator.feed(payload))
            error = self._translator.error
            if error is not None and not self._error_sent:
                self._error_sent = True
                out.append(_data({"error": error}))
        return b"".join(out)

    def trailer(self) -> bytes:
        if not self._translator.finished and not self._error_sent:
            code = self._call.state.error_code or "upstream_stream_error"
            body = openai_error_body(502, code, "The upstream stream ended before the response was complete.")
            return _data(body) + DONE
        return DONE


def _translate(body: dict[str, Any]) -> dict[str, Any]:
    try:
        translated = chat_to_responses(body)
    except ChatRequestError as error:
        raise _ChatInvalid(error) from None
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        translated["prompt_cache_key"] = key  # keeps the conversation on one upstream cache
    return translated


class _ChatInvalid(Exception):
    def __init__(self, error: ChatRequestError) -> None:
        super().__init__(str(error))
        self.error = error


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(request: Request) -> Response:
    """Chat Completions, streamed (``stream: true``) or not, with tools and usage."""
    try:
        runtime, principal, body, call, _provider = await prepare_call(
            request, "chat_completions", "chat", ("codex",)
        )
        translated = _translate(body)
    except SubLaneError as error:
        return from_sublane_error(error)
    except _ChatInvalid as invalid:
        return openai_error_response(400, "invalid_request", invalid.error.message, param=invalid.error.param)
    completion_id = "chatcmpl-" + secrets.token_hex(12)
    created = int(runtime.clock.time())
    upstream = codex_upstream(request, translated, call.model)
    response = await open_or_refuse(runtime, call, principal, upstream, openai_error_response)
    if isinstance(response, Response):
        return response
    if body.get("stream") is True:
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        translator = ChatStreamTranslator(
            model=call.model, completion_id=completion_id, created=created, include_usage=include_usage
        )
        chunks = _ChunkStream(call, translator)
        observer = CodexStreamObserver(call.state)
        return streaming_response(runtime, call, response, observer, transform=chunks, trailer=chunks.trailer)
    final = await collect_final(call, response, call.started + runtime.settings.request_timeout_s)
    if final is None:
        return stream_failure_response(call)
    completion = responses_to_chat_completion(
        final, model=call.model, completion_id=completion_id, created=created
    )
    return JSONResponse(completion, headers={"x-request-id": call.request_id})
