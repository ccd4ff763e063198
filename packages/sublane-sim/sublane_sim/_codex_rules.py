"""What the Codex backend accepts, and which request fields make up the cache-affinity key."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ._accounts import Account
from ._field_types import CODEX_TYPES, type_problem

__all__ = ["codex_cache_key", "codex_prefix_key", "validate_codex_body"]


def codex_cache_key(body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The affinity key: `prompt_cache_key`, else the session headers."""
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        return key
    for name in ("session_id", "session-id", "conversation_id"):
        if headers.get(name):
            return headers[name]
    return None


def codex_prefix_key(body: dict[str, Any], key: str | None) -> str | None:
    """The affinity key and the prefix it caches over HTTP: OpenAI's prompt cache matches a prompt's
    exact prefix, so a request whose instructions or first input item changed misses (COST-4). A
    WebSocket turn continuing a response (``previous_response_id``) sends only the new items, so
    the socket keeps the plain key."""
    if key is None:
        return None
    items = body.get("input")
    first = items[0] if isinstance(items, list) and items else items
    prefix = json.dumps([body.get("instructions"), first], sort_keys=True).encode()
    return f"{key}:{hashlib.sha256(prefix).hexdigest()}"


def validate_codex_body(body: dict[str, Any] | None, account: Account, *, websocket: bool) -> str | None:
    """The `detail` of the 400 the real backend would answer, or `None` when the body is accepted."""
    if body is None:
        return "Request body must be a JSON object"
    if body.get("store") is not False:
        return "Store must be set to false"
    if not websocket and account.require_stream and body.get("stream") is not True:
        return "Stream must be set to true"
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "Missing required parameter: 'model'"
    if model not in account.models:
        return f"The '{model}' model is not supported when using Codex with a ChatGPT account."
    if "input" in body and not isinstance(body["input"], list | str):
        return "Invalid type for 'input': expected an array of items"
    problem = type_problem(body, CODEX_TYPES)
    if problem is not None:
        name, expected, got = problem
        return f"Invalid type for '{name}': expected {expected}, but got {got} instead."
    return None
