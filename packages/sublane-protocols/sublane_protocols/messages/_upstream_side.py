"""The Messages upstream side: a hub (Responses) call served by an upstream speaking Messages.

The request mapping is in ``_upstream_request`` (what Claude cannot honour is dropped or refused
there, with the reasons), the event mapping in ``_upstream_events``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._hub import UpstreamSide
from sublane_protocols.messages._shape import is_int
from sublane_protocols.messages._upstream_events import MessagesEvents, answer_events
from sublane_protocols.messages._upstream_request import count_request, messages_request


class MessagesUpstreamSide(UpstreamSide):
    """Responses → Messages requests; Messages events and answers → Responses."""

    protocol = WireProtocol.MESSAGES

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        """``clock``: wall time in seconds, for the ``created_at`` of the responses made."""
        self._clock = clock

    def request_from_responses(self, body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
        return messages_request(body, system_prelude=system_prelude)

    def new_events(self, request: Mapping[str, Any], *, model: str) -> MessagesEvents:
        return MessagesEvents(request, model=model, clock=self._clock)

    def answer_to_responses(
        self, final: Mapping[str, Any], *, model: str, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        events = self.new_events(request, model=model)
        payloads = [dict(final)] if final.get("type") == "error" else answer_events(final)
        for payload in payloads:
            for event in events.feed(payload):
                if event["type"] in ("response.completed", "response.incomplete", "response.failed"):
                    response: dict[str, Any] = event["response"]
                    return response
        raise ValueError("the Messages answer did not end")  # unreachable: answer_events ends with a stop

    def count_request_from_responses(
        self, body: Mapping[str, Any], *, system_prelude: str = ""
    ) -> dict[str, Any]:
        return count_request(body, system_prelude=system_prelude)

    def counted_tokens(self, answer: Mapping[str, Any]) -> int:
        tokens = answer.get("input_tokens")
        if isinstance(tokens, int) and is_int(tokens) and tokens >= 0:
            return tokens
        raise ValueError("the count_tokens answer has no 'input_tokens' count")
