"""What the Codex backend accepts, and which request fields make up the cache-affinity key."""

from __future__ import annotations

from typing import Any

from ._accounts import Account
from ._field_types import CODEX_TYPES, type_problem

__all__ = ["codex_cache_key", "validate_codex_body"]


def codex_cache_key(body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The affinity key: `prompt_cache_key`, else the session headers."""
    key = body.get("prompt_cache_key")
    if isinstance(key, str) and key:
        return key
    for name in ("session_id", "session-id", "conversation_id"):
        if headers.get(name):
            return headers[name]
    return None


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
