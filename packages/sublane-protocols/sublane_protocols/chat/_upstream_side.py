"""Chat Completions as an upstream speaks it (any OpenAI-compatible server), seen from the hub.

Requests: :mod:`sublane_protocols.chat._upstream_request`; stream chunks and JSON answers:
:mod:`sublane_protocols.chat._upstream_events`. A Chat Completions client on such an upstream
passes through untouched (no cell); every other client protocol reaches it through the hub.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._hub import UpstreamSide
from sublane_protocols.chat._upstream_events import ChatEventsToResponses
from sublane_protocols.chat._upstream_request import chat_request


class ChatUpstreamSide(UpstreamSide):
    """Responses → Chat Completions requests; Chat chunks and answers → Responses."""

    protocol = WireProtocol.CHAT_COMPLETIONS

    def request_from_responses(self, body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
        return chat_request(body, system_prelude=system_prelude)

    def new_events(self, request: Mapping[str, Any], *, model: str) -> ChatEventsToResponses:
        return ChatEventsToResponses(request, model=model)

    def answer_to_responses(
        self, final: Mapping[str, Any], *, model: str, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        events = ChatEventsToResponses(request, model=model)
        produced = events.feed(final)
        if not events.finished:
            produced += events.at_end()
        if not events.finished:  # an answer without a finish reason is whole all the same
            produced += events.feed({"choices": [{"delta": {}, "finish_reason": "stop"}]})
            produced += events.at_end()
        for event in reversed(produced):
            if event["type"] in ("response.completed", "response.incomplete", "response.failed"):
                response: dict[str, Any] = event["response"]
                return response
        raise ValueError("the Chat Completions answer did not end")  # unreachable
