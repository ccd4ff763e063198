"""The Messages client side: a Claude Code / ``anthropic`` SDK client served through the hub.

The request mapping is in ``_client_request`` (with what is dropped or refused, and why), the
stream and answer mapping in ``_client_frames``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._hub import ClientSide
from sublane_protocols.messages._client_frames import MessagesFrames, messages_answer
from sublane_protocols.messages._client_request import responses_request


class MessagesClientSide(ClientSide):
    """Anthropic Messages to and from the Responses hub (PROTOCOLS §2.3–2.5)."""

    protocol = WireProtocol.MESSAGES

    def request_to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return responses_request(body)

    def new_frames(
        self, body: Mapping[str, Any], *, model: str, created: int, json_array: bool = False
    ) -> MessagesFrames:
        return MessagesFrames(model=model)

    def answer_from_responses(self, final: Mapping[str, Any], *, model: str, created: int) -> dict[str, Any]:
        return messages_answer(final, model=model)

    def count_answer(self, tokens: int) -> dict[str, Any]:
        return {"input_tokens": tokens}
