"""How a pass-through stream ends when its upstream broke off before the terminal event.

The bytes relayed so far stay untouched (XLAT-1); what is added is the protocol's own error
ending, so the client sees a failed turn rather than a stream that merely stopped: Responses
``response.failed``, Anthropic's ``event: error`` and Gemini's ``data: {"error": …}`` chunk, as the
translated cells end theirs. A Gemini stream from a wrapping upstream is reframed and ends through
that framing; one from an upstream speaking Gemini unwrapped (an API key) ends here.
"""

from __future__ import annotations

from sublane_core import WireProtocol
from sublane_core.sse import frame
from sublane_protocols._errors import render_error
from sublane_protocols._framing import json_bytes, named_sse
from sublane_protocols.messages._client_frames import error_object
from sublane_protocols.responses._client_side import failed_event

_CUT_SHORT = "The upstream stream ended before the response was complete."


def cut_stream_ending(protocol: WireProtocol, error_code: str, response_id: str | None = None) -> bytes:
    """The frame that ends a pass-through stream of ``protocol`` cut short with ``error_code``
    (``response_id``: the upstream's, when its stream named one); empty for other protocols."""
    if protocol is WireProtocol.RESPONSES:
        return named_sse(failed_event(response_id, error_code, _CUT_SHORT))
    if protocol is WireProtocol.MESSAGES:
        return named_sse({"type": "error", "error": error_object(error_code, _CUT_SHORT)})
    if protocol is WireProtocol.GEMINI:
        return frame(json_bytes(render_error(protocol, 502, error_code, _CUT_SHORT).body))
    return b""
