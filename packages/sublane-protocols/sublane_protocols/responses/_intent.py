"""The intent of an OpenAI Responses or Chat Completions call (AFF-1 for Codex clients)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_protocols._intent import CallIntent, require_model, text_key


def openai_conversation_key(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """``session_id`` / ``session-id`` header (any case), else a non-empty ``prompt_cache_key``."""
    for name in ("session_id", "session-id"):
        key = text_key(headers.get(name))
        if key is not None:
            return key
    return text_key(body.get("prompt_cache_key"))


def read_openai_intent(
    headers: Mapping[str, str], body: Mapping[str, Any], _path_model: str | None
) -> CallIntent:
    return CallIntent(
        model=require_model(body.get("model")),
        stream=body.get("stream") is True,
        conversation_key=openai_conversation_key(headers, body),
        continuation=bool(body.get("previous_response_id")),
    )
