"""Responses as the Codex backend accepts it, seen from the hub (the Codex leg of a cell).

The hub body is a Responses body already; what the ChatGPT backend refuses is taken off: it answers
``400 Unsupported parameter`` to ``temperature``, ``top_p`` and ``max_output_tokens`` (see
``chat/_translate.py``), so those client settings are dropped as harmless; it has no stop sequences,
which change an answer's meaning, so the hub's ``stop`` is refused (XLAT-3). ``store: false`` and
``stream: true`` are what it requires. Events and answers are the hub's own: they pass as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._hub import EventsToResponses, UpstreamSide
from sublane_protocols._translators import TranslationRefused

_DROPPED = ("temperature", "top_p", "max_output_tokens", "stop")


class _Unchanged:
    __slots__ = ()

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [payload]  # type: ignore[list-item]  # read-only downstream; no copy on the hot path


class ResponsesUpstreamSide(UpstreamSide):
    """The Codex leg: a hub body made acceptable to the ChatGPT Codex backend."""

    protocol = WireProtocol.RESPONSES
    speaks_hub = True

    def request_from_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if body.get("stop") not in (None, "", []):
            raise TranslationRefused(
                "Stop sequences are not supported by this model's provider.",
                code="unsupported_for_provider",
                param="stop",
            )
        request = {key: value for key, value in body.items() if key not in _DROPPED}
        request["store"] = False
        request["stream"] = True
        return request

    def new_events(self, request: Mapping[str, Any], *, model: str) -> EventsToResponses:
        return _Unchanged()

    def answer_to_responses(
        self, final: Mapping[str, Any], *, model: str, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        return dict(final)
