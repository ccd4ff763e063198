"""OpenAI Responses, as the Codex CLI and the ``openai`` SDK speak it (HTTP JSON, SSE, WebSocket)."""

from sublane_core import WireProtocol
from sublane_protocols._collect import register_collector
from sublane_protocols._errors import register_error_shape
from sublane_protocols._fields import register_field_spec
from sublane_protocols._hub import register_client_side, register_upstream_side
from sublane_protocols._intent import register_intent_reader
from sublane_protocols.responses._client_side import ResponsesClientSide, ResponsesFrames
from sublane_protocols.responses._collect import ResponsesCollector
from sublane_protocols.responses._errors import openai_error_body, openai_error_type, render_openai_error
from sublane_protocols.responses._fields import RESPONSES_FIELDS
from sublane_protocols.responses._intent import openai_conversation_key, read_openai_intent
from sublane_protocols.responses._upstream_side import ResponsesUpstreamSide

register_intent_reader(WireProtocol.RESPONSES, read_openai_intent)
register_error_shape(WireProtocol.RESPONSES, render_openai_error)
register_field_spec(WireProtocol.RESPONSES, RESPONSES_FIELDS)
register_collector(WireProtocol.RESPONSES, ResponsesCollector)
register_client_side(ResponsesClientSide())
register_upstream_side(ResponsesUpstreamSide())

__all__ = [
    "ResponsesClientSide",
    "ResponsesCollector",
    "ResponsesFrames",
    "ResponsesUpstreamSide",
    "openai_conversation_key",
    "openai_error_body",
    "openai_error_type",
    "read_openai_intent",
]
