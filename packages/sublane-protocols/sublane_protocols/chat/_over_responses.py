"""Chat Completions as a client speaks it, seen from the hub, and its cell with a Responses upstream."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol, new_hex_id
from sublane_core.sse import frame
from sublane_protocols._hub import ClientSide, HubTranslator
from sublane_protocols._translators import TranslationRefused
from sublane_protocols.chat._translate import (
    ChatRequestError,
    ChatStreamTranslator,
    chat_to_responses,
    responses_to_chat_completion,
)
from sublane_protocols.responses._client_side import ResponsesClientSide
from sublane_protocols.responses._errors import openai_error_body
from sublane_protocols.responses._upstream_side import ResponsesUpstreamSide

DONE = frame(b"[DONE]")


def _data(payload: Mapping[str, Any]) -> bytes:
    return frame(json.dumps(payload, separators=(",", ":")).encode())


def new_completion_id() -> str:
    return "chatcmpl-" + new_hex_id()


class ChatFrames:
    """Responses events in, ``chat.completion.chunk`` SSE frames out, ``[DONE]`` last."""

    __slots__ = ("_error_sent", "_translator")

    def __init__(self, translator: ChatStreamTranslator) -> None:
        self._translator = translator
        self._error_sent = False

    @property
    def finished(self) -> bool:
        return self._translator.finished

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        out = [_data(chunk) for chunk in self._translator.feed(payload)]
        error = self._translator.error
        if error is not None and not self._error_sent:
            self._error_sent = True
            out.append(_data({"error": error}))
        return b"".join(out)

    def trailer(self, error_code: str | None) -> bytes:
        if not self._translator.finished and not self._error_sent:
            code = error_code or "upstream_stream_error"
            body = openai_error_body(502, code, "The upstream stream ended before the response was complete.")
            return _data(body) + DONE
        return DONE


def _sampling(body: Mapping[str, Any], stop: Any) -> dict[str, Any]:
    """The sampling settings ``chat_to_responses`` validated, in the hub's fields; the Codex leg
    drops those its backend refuses, other upstreams honour them (XLAT-2)."""
    hub: dict[str, Any] = {}
    for field in ("temperature", "top_p"):
        if body.get(field) is not None:
            hub[field] = body[field]
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None:
        hub["max_output_tokens"] = limit
    if isinstance(stop, str) and stop:
        hub["stop"] = [stop]
    elif isinstance(stop, list) and stop:
        if not all(isinstance(item, str) for item in stop):
            raise TranslationRefused("'stop' must be a string or a list of strings.", param="stop")
        hub["stop"] = list(stop)
    elif stop not in (None, "", []):
        raise TranslationRefused("'stop' must be a string or a list of strings.", param="stop")
    return hub


class ChatClientSide(ClientSide):
    """Chat Completions as a client speaks it, to and from the Responses hub (PROTOCOLS.md §1.3–1.5)."""

    protocol = WireProtocol.CHAT_COMPLETIONS

    def request_to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        stop = body.get("stop")
        try:
            translated = chat_to_responses({k: v for k, v in body.items() if k != "stop"})
        except ChatRequestError as error:
            raise TranslationRefused(error.message, param=error.param) from None
        key = body.get("prompt_cache_key")
        if isinstance(key, str) and key:
            translated["prompt_cache_key"] = key  # keeps the conversation on one upstream cache
        translated.update(_sampling(body, stop))
        return translated

    def new_frames(
        self, body: Mapping[str, Any], *, model: str, created: int, json_array: bool = False
    ) -> ChatFrames:
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        translator = ChatStreamTranslator(
            model=model, completion_id=new_completion_id(), created=created, include_usage=include_usage
        )
        return ChatFrames(translator)

    def answer_from_responses(self, final: Mapping[str, Any], *, model: str, created: int) -> dict[str, Any]:
        return responses_to_chat_completion(
            final, model=model, completion_id=new_completion_id(), created=created
        )


class ChatOverResponses(HubTranslator):
    """The Chat Completions ⇄ Responses cell: the Chat client side straight onto the hub."""

    def __init__(self) -> None:
        self._chat = ChatClientSide()
        super().__init__(self._chat, ResponsesUpstreamSide(), ResponsesClientSide())

    def new_stream(
        self,
        body: Mapping[str, Any],
        *,
        model: str,
        created: int,
        json_array: bool = False,
        hub: Mapping[str, Any] | None = None,
    ) -> ChatFrames:
        return self._chat.new_frames(body, model=model, created=created)
