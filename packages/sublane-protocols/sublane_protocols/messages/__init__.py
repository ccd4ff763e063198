"""Anthropic Messages, as Claude Code and the ``anthropic`` SDK speak it."""

from sublane_core import WireProtocol
from sublane_protocols._errors import register_error_shape
from sublane_protocols._fields import register_field_spec
from sublane_protocols._hub import register_client_side, register_upstream_side
from sublane_protocols._intent import register_intent_reader
from sublane_protocols.messages._client_side import MessagesClientSide
from sublane_protocols.messages._errors import (
    anthropic_error_body,
    anthropic_error_type,
    render_anthropic_error,
)
from sublane_protocols.messages._fields import MESSAGES_FIELDS
from sublane_protocols.messages._intent import anthropic_conversation_key, read_anthropic_intent
from sublane_protocols.messages._upstream_side import MessagesUpstreamSide

register_intent_reader(WireProtocol.MESSAGES, read_anthropic_intent)
register_error_shape(WireProtocol.MESSAGES, render_anthropic_error, request_id_headers=("request-id",))
register_field_spec(WireProtocol.MESSAGES, MESSAGES_FIELDS)
register_client_side(MessagesClientSide())
register_upstream_side(MessagesUpstreamSide())

__all__ = [
    # the hub's sides (the lead's matrix registers the translators)
    "MessagesClientSide",
    "MessagesUpstreamSide",
    # intent and errors
    "anthropic_conversation_key",
    "anthropic_error_body",
    "anthropic_error_type",
    "read_anthropic_intent",
]
