"""Responses as an upstream speaks it, seen from the hub: the hub's own protocol.

A hub body is a Responses body already, and the upstream's events and answers are the hub's own:
they pass as they are. What one upstream refuses, drops or requires of Responses is its provider's
:class:`~sublane_core.Dialect`, which the hub applies before this side sees the body; only a
``system_prelude`` lands here, leading the ``instructions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._hub import EventsToResponses, UpstreamSide, led_by


class _Unchanged:
    __slots__ = ()

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [payload]  # type: ignore[list-item]  # read-only downstream; no copy on the hot path


class ResponsesUpstreamSide(UpstreamSide):
    """An upstream speaking Responses: the hub body goes as it is."""

    protocol = WireProtocol.RESPONSES
    speaks_hub = True

    def request_from_responses(self, body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
        request = dict(body)
        if system_prelude:
            instructions = request.get("instructions")
            texts = [instructions] if isinstance(instructions, str) else []
            request["instructions"] = "\n\n".join(led_by(system_prelude, texts))
        return request

    def new_events(self, request: Mapping[str, Any], *, model: str) -> EventsToResponses:
        return _Unchanged()

    def answer_to_responses(
        self, final: Mapping[str, Any], *, model: str, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        return dict(final)
