"""Google Gemini ``generateContent``, as the Gemini CLI and the ``google-genai`` SDK speak it (GEM-2),
and its two sides of the translation hub: :class:`GeminiClientSide` (a Gemini client served by
another upstream) and :class:`GeminiUpstreamSide` (Antigravity serving another client)."""

from sublane_core import WireProtocol
from sublane_protocols._errors import register_error_shape
from sublane_protocols._fields import register_field_spec
from sublane_protocols._hub import register_client_side, register_upstream_side
from sublane_protocols._intent import register_intent_reader
from sublane_protocols.gemini._client_side import GeminiClientSide
from sublane_protocols.gemini._errors import google_error_body, google_status, render_google_error
from sublane_protocols.gemini._fields import GEMINI_FIELDS
from sublane_protocols.gemini._frames import GeminiFrames
from sublane_protocols.gemini._intent import check_generate_request, generate_request, read_gemini_intent
from sublane_protocols.gemini._schema import gemini_parameters, to_gemini_schema, to_json_schema
from sublane_protocols.gemini._upstream_side import GeminiEventsToResponses, GeminiUpstreamSide

register_intent_reader(WireProtocol.GEMINI, read_gemini_intent)
register_error_shape(WireProtocol.GEMINI, render_google_error)
register_field_spec(WireProtocol.GEMINI, GEMINI_FIELDS)
register_client_side(GeminiClientSide())
register_upstream_side(GeminiUpstreamSide())

__all__ = [
    "check_generate_request",
    "generate_request",
    "google_error_body",
    "google_status",
    "read_gemini_intent",
    # the hub's Gemini sides
    "GeminiClientSide",
    "GeminiEventsToResponses",
    "GeminiFrames",
    "GeminiUpstreamSide",
    "gemini_parameters",
    "to_gemini_schema",
    "to_json_schema",
]
