"""OpenAI Chat Completions, and its translation to and from the Responses protocol: as a client
protocol (its client side) and as an upstream protocol (any OpenAI-compatible server)."""

from sublane_core import WireProtocol
from sublane_protocols._errors import register_error_shape
from sublane_protocols._fields import register_field_spec
from sublane_protocols._hub import register_client_side, register_upstream_side
from sublane_protocols._intent import register_intent_reader
from sublane_protocols.chat._fields import CHAT_FIELDS
from sublane_protocols.chat._over_responses import ChatClientSide, ChatFrames, ChatOverResponses
from sublane_protocols.chat._translate import (
    ChatRequestError,
    ChatStreamTranslator,
    chat_to_responses,
    responses_to_chat_completion,
)
from sublane_protocols.chat._upstream_events import ChatEventsToResponses
from sublane_protocols.chat._upstream_request import chat_request
from sublane_protocols.chat._upstream_side import ChatUpstreamSide
from sublane_protocols.responses._errors import render_openai_error
from sublane_protocols.responses._intent import read_openai_intent

register_intent_reader(WireProtocol.CHAT_COMPLETIONS, read_openai_intent)
register_error_shape(WireProtocol.CHAT_COMPLETIONS, render_openai_error)
register_field_spec(WireProtocol.CHAT_COMPLETIONS, CHAT_FIELDS)
register_client_side(ChatClientSide())
register_upstream_side(ChatUpstreamSide())

__all__ = [
    "ChatClientSide",
    "ChatEventsToResponses",
    "ChatFrames",
    "ChatOverResponses",
    "ChatRequestError",
    "ChatStreamTranslator",
    "ChatUpstreamSide",
    "chat_request",
    "chat_to_responses",
    "responses_to_chat_completion",
]
