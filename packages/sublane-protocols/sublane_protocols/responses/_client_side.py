"""Responses as a client speaks it, seen from the hub: the identity, framed as SSE.

A Responses client served by another protocol's upstream gets the hub's events as they are, one
``event:``/``data:`` SSE frame each; a stream that broke off ends with ``response.failed``, the
terminal event OpenAI's own stream uses for a failed turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._framing import named_sse
from sublane_protocols._hub import ClientSide

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


def failed_event(response_id: str | None, code: str, message: str) -> dict[str, Any]:
    """The ``response.failed`` event of a turn that ended with ``code``."""
    return {
        "type": "response.failed",
        "response": {
            "id": response_id,
            "object": "response",
            "status": "failed",
            "error": {"code": code, "message": message},
            "output": [],
        },
    }


class ResponsesFrames:
    """Responses events in, SSE frames out; remembers the response id for a closing error."""

    __slots__ = ("_finished", "_response_id", "_sequence")

    def __init__(self) -> None:
        self._finished = False
        self._response_id: str | None = None
        self._sequence = 0

    @property
    def finished(self) -> bool:
        return self._finished

    def event(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """The event as the client gets it (numbered), ``None`` once the turn has ended."""
        if self._finished:
            return None
        kind = event.get("type")
        if kind == "response.created":
            response = event.get("response")
            if isinstance(response, dict) and isinstance(response.get("id"), str):
                self._response_id = response["id"]
        if kind in _TERMINAL:
            self._finished = True
        out = dict(event)
        out.setdefault("sequence_number", self._sequence)
        self._sequence += 1
        return out

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        event = self.event(payload)
        return b"" if event is None else named_sse(event)

    def closing_event(self, error_code: str | None) -> dict[str, Any] | None:
        """The ``response.failed`` event for a stream that ended early, else ``None``."""
        if self._finished:
            return None
        code = error_code or "upstream_stream_error"
        message = "The upstream stream ended before the response was complete."
        return self.event(failed_event(self._response_id, code, message))

    def trailer(self, error_code: str | None) -> bytes:
        event = self.closing_event(error_code)
        return b"" if event is None else named_sse(event)


class ResponsesClientSide(ClientSide):
    """The hub as a client protocol: requests and answers pass as they are."""

    protocol = WireProtocol.RESPONSES

    def request_to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return dict(body)

    def new_frames(
        self, body: Mapping[str, Any], *, model: str, created: int, json_array: bool = False
    ) -> ResponsesFrames:
        return ResponsesFrames()

    def answer_from_responses(self, final: Mapping[str, Any], *, model: str, created: int) -> dict[str, Any]:
        return dict(final)
