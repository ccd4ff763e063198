"""Building OpenAI API requests from a Responses body (``POST {base_url}/responses``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import Dialect

#: Responses as the OpenAI API takes it, for bodies translated from another client protocol: it has
#: no stop sequences (``400 Unknown parameter: 'stop'``), which change an answer's meaning, so a
#: translated request setting them is refused (XLAT-3); ``store: false`` keeps a translated
#: conversation off the key owner's stored responses (SubLane sends the whole input every turn).
OPENAI_DIALECT = Dialect(
    refused=(("stop", "Stop sequences are not supported by the OpenAI Responses API."),),
    required=(("store", False),),
)

#: The smallest ``max_output_tokens`` the OpenAI API takes (a smaller one is refused: 400
#: ``integer_below_min_value``, "Expected a value >= 16"), though Chat Completions and Messages
#: clients may ask for 1 (a reachability probe): such a cap is raised to this.
MIN_OUTPUT_TOKENS = 16

# Fields meaningful only on a stream, or only to a Codex backend's WebSocket.
_STREAM_ONLY = ("stream_options",)
_NEVER_SENT = ("generate",)


def responses_body(body: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """The client's (or the hub's) Responses body, streamed or answered as one JSON object."""
    prepared = dict(body)
    prepared["stream"] = stream
    for key in _NEVER_SENT + (() if stream else _STREAM_ONLY):
        prepared.pop(key, None)
    cap = prepared.get("max_output_tokens")
    if isinstance(cap, int) and not isinstance(cap, bool) and 0 < cap < MIN_OUTPUT_TOKENS:
        prepared["max_output_tokens"] = MIN_OUTPUT_TOKENS
    return prepared


def compact_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A compaction body (``POST {base_url}/responses/compact`` answers plain JSON, never a stream)."""
    prepared = dict(body)
    for key in ("stream", *_STREAM_ONLY, *_NEVER_SENT):
        prepared.pop(key, None)
    return prepared


def upstream_headers(api_key: str, *, stream: bool) -> dict[str, str]:
    """The key, and nothing of the client's: its identity and conversation headers stay with the
    gateway (the key's owner is SubLane's admin, not the client)."""
    return {
        "authorization": f"Bearer {api_key}",
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
    }
