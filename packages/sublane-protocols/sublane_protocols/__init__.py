"""SubLane client protocols: what a call asks for, errors in each protocol's own shape, and the
translators between protocols (pure functions and incremental stream translators).

One subpackage per client protocol (``responses``, ``chat``, ``messages``, ``gemini``, and
``code_assist``, Gemini in Code Assist's envelope); each
registers its intent reader, its error shape and the translators it owns when imported, and this
package imports them all.
"""

from sublane_protocols import chat, code_assist, gemini, messages, responses
from sublane_protocols._collect import Collector, new_collector
from sublane_protocols._endings import cut_stream_ending
from sublane_protocols._errors import ErrorAnswer, error_headers, render_error, request_id_headers
from sublane_protocols._fields import body_field_problem
from sublane_protocols._framing import ReframedStream
from sublane_protocols._hub import (
    ClientSide,
    EventsToResponses,
    HubTranslator,
    UpstreamSide,
    can_serve,
    client_side,
    events_at_end,
    hub_translator,
    translator_for,
    upstream_side,
)
from sublane_protocols._intent import CallIntent, read_intent, require_model
from sublane_protocols._prefix import PrefixDigest, prefix_digest
from sublane_protocols._translators import (
    StreamTranslator,
    TranslationRefused,
    Translator,
)
from sublane_protocols.responses import ResponsesCollector

__version__ = "0.1.0"

__all__ = [
    # subpackages
    "chat",
    "code_assist",
    "gemini",
    "messages",
    "responses",
    # intent
    "CallIntent",
    "read_intent",
    "require_model",
    "body_field_problem",
    # the prompt prefix (COST-4)
    "PrefixDigest",
    "prefix_digest",
    # errors
    "ErrorAnswer",
    "error_headers",
    "render_error",
    "request_id_headers",
    # translation
    "ClientSide",
    "EventsToResponses",
    "HubTranslator",
    "UpstreamSide",
    "client_side",
    "upstream_side",
    "events_at_end",
    "Collector",
    "new_collector",
    "ReframedStream",
    "cut_stream_ending",
    "ResponsesCollector",
    "StreamTranslator",
    "TranslationRefused",
    "Translator",
    "can_serve",
    "hub_translator",
    "translator_for",
]
