"""Google Gemini ``generateContent``, as the Gemini CLI and the ``google-genai`` SDK speak it (GEM-2)."""

from sublane_core import WireProtocol
from sublane_protocols._errors import register_error_shape
from sublane_protocols._intent import register_intent_reader
from sublane_protocols.gemini._errors import google_error_body, google_status, render_google_error
from sublane_protocols.gemini._intent import check_generate_request, generate_request, read_gemini_intent

register_intent_reader(WireProtocol.GEMINI, read_gemini_intent)
register_error_shape(WireProtocol.GEMINI, render_google_error)

__all__ = [
    "check_generate_request",
    "generate_request",
    "google_error_body",
    "google_status",
    "read_gemini_intent",
]
