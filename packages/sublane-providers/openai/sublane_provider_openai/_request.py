"""Building OpenAI API requests from a Responses body (``POST {base_url}/responses``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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

#: Responses fields only the ChatGPT backend takes, which a Codex CLI sends and the API answers with
#: 400 ``unknown_parameter``: ``client_metadata`` (its installation, session, thread and turn ids —
#: the client's identity, no business of the key's owner) and a WebSocket prewarm's ``generate``.
#: They are left out; every other field is sent as the client wrote it — a parameter the API added
#: after this list was written reaches it, and a field it does not know is refused by the API itself,
#: with its own message naming it.
BACKEND_ONLY = ("client_metadata", "generate")
#: What ``POST /v1/responses/compact`` takes (its reference's parameters): a Codex CLI's compaction
#: repeats its turn's ``tools``, ``reasoning``, ``parallel_tool_calls``…, which the API refuses there.
COMPACT_PARAMETERS = frozenset(
    {
        "model", "image", "input", "instructions", "previous_response_id", "prompt_cache_key",
        "prompt_cache_options", "prompt_cache_retention", "service_tier",
    }
)  # fmt: skip
# Fields meaningful only on a stream.
_STREAM_ONLY = ("stream_options",)


def _taken(body: Mapping[str, Any], parameters: frozenset[str]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key in parameters}


#: The API's version path, part of its base URL as the OpenAI SDK takes it.
VERSION_PATH = "/v1"


def api_base(base_url: str) -> str:
    """The base URL as the OpenAI SDK takes it, ``/v1`` included: a bare host (``https://api.
    openai.com``) gets ``/v1``; a doubled ``/v1/v1`` is one; any other path is a proxy's own
    (Azure's ``…/openai/v1``, a gateway's ``…/api/openai``) and kept as given."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    while path.lower().endswith(VERSION_PATH + VERSION_PATH):
        path = path[: -len(VERSION_PATH)]
    return urlunsplit(parts._replace(path=path or VERSION_PATH)).rstrip("/")


def responses_body(body: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
    """The client's (or the hub's) Responses body as the API takes it, streamed or answered as one
    JSON object: the ChatGPT backend's own fields (:data:`BACKEND_ONLY`) are left out."""
    prepared = {key: value for key, value in body.items() if key not in BACKEND_ONLY}
    prepared["stream"] = stream
    if not stream:
        for key in _STREAM_ONLY:
            prepared.pop(key, None)
    cap = prepared.get("max_output_tokens")
    if isinstance(cap, int) and not isinstance(cap, bool) and 0 < cap < MIN_OUTPUT_TOKENS:
        prepared["max_output_tokens"] = MIN_OUTPUT_TOKENS
    return prepared


def compact_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A compaction body (``POST {base_url}/responses/compact`` answers plain JSON, never a stream)
    with only what that endpoint takes (:data:`COMPACT_PARAMETERS`)."""
    return _taken(body, COMPACT_PARAMETERS)


def upstream_headers(api_key: str, *, stream: bool) -> dict[str, str]:
    """The key, and nothing of the client's: its identity and conversation headers stay with the
    gateway (the key's owner is SubLane's admin, not the client)."""
    return {
        "authorization": f"Bearer {api_key}",
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
    }
