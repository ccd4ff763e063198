"""Building Codex backend requests from what a client sent (PROTOCOLS §1.2, §1.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import Dialect, new_uuid

DEFAULT_ORIGINATOR = "codex_cli_rs"
CONVERSATION_HEADERS = frozenset(
    {"session_id", "session-id", "thread-id", "conversation_id", "x-client-request-id"}
)
_PASSTHROUGH = frozenset({"originator", "user-agent", "version", "accept-language"})
_PASSTHROUGH_PREFIXES = ("x-codex-", "x-openai-", "x-responsesapi-")
# Fields the backend rejects ("Unsupported parameter") or ignores, on every transport.
_UNSUPPORTED = ("max_output_tokens", "temperature", "top_p", "prompt_cache_retention", "safety_identifier")
# Fields meaningful only on a WebSocket (previous_response_id lives per socket; generate: prewarm).
_HTTP_ONLY_DROP = ("stream_options", "generate", "previous_response_id")

#: Responses as the backend takes it, for bodies translated from another client protocol: it answers
#: ``400 Unsupported parameter`` to the sampling settings and the output cap, which are dropped as
#: harmless; it has no stop sequences, which change an answer's meaning, so those are refused
#: (XLAT-3); ``store: false`` and ``stream: true`` are what it requires.
CODEX_DIALECT = Dialect(
    refused=(("stop", "Stop sequences are not supported by this model's provider."),),
    dropped=frozenset({"temperature", "top_p", "max_output_tokens", "stop"}),
    required=(("store", False), ("stream", True)),
)


_SENT, _CONVERSATION, _KEPT = "sent", "conversation", "kept"  # kept: stays with the gateway
_MAX_KINDS = 1024
_KINDS: dict[str, tuple[str, str]] = {}  # a client header's name: (lower-case name, its kind)


def _kind(raw_name: str) -> tuple[str, str]:
    """What :func:`upstream_headers` does with a client header, remembered per name (a client
    sends the same few names on every call)."""
    name = raw_name.lower()
    if name in _PASSTHROUGH or name.startswith(_PASSTHROUGH_PREFIXES):
        kind = (name, _SENT)
    elif name in CONVERSATION_HEADERS:
        kind = (name, _CONVERSATION)
    else:
        kind = (name, _KEPT)
    if len(_KINDS) < _MAX_KINDS:
        _KINDS[raw_name] = kind
    return kind


def upstream_headers(
    client_headers: Mapping[str, str],
    *,
    access_token: str,
    account_id: str | None,
    bound: bool,
) -> dict[str, str]:
    """Headers for the backend: our bearer and account, the client's identity and turn headers.

    With ``bound=False`` (no conversation key, AFF-2) the client's conversation headers are not sent
    and a random correlation ID stands in, so unrelated calls never share an upstream session.
    """
    headers: dict[str, str] = {}
    kinds = _KINDS
    for raw_name, value in client_headers.items():
        kind = kinds.get(raw_name) or _kind(raw_name)
        if kind[1] is _SENT or (kind[1] is _CONVERSATION and bound):
            headers[kind[0]] = value
    headers.setdefault("originator", DEFAULT_ORIGINATOR)
    if not bound:
        headers["x-client-request-id"] = new_uuid()
    headers["authorization"] = f"Bearer {access_token}"
    if account_id:
        headers["chatgpt-account-id"] = account_id
    return headers


def responses_body(body: Mapping[str, Any], *, model: str, websocket: bool = False) -> dict[str, Any]:
    """The client's Responses body as the backend wants it: ``store:false``, ``stream:true``."""
    prepared = dict(body)
    prepared["model"] = model
    prepared["store"] = False
    prepared["stream"] = True
    for key in _UNSUPPORTED + (() if websocket else _HTTP_ONLY_DROP):
        prepared.pop(key, None)
    return prepared


def compact_body(body: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """A compaction body: the Responses fields minus ``stream`` (it answers plain JSON)."""
    prepared = dict(body)
    prepared["model"] = model
    for key in ("stream", "stream_options", "generate", "previous_response_id", *_UNSUPPORTED):
        prepared.pop(key, None)
    return prepared
