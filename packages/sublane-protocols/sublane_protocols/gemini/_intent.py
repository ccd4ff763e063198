"""The intent of a Gemini ``generateContent`` call: the model is in the route, not the body.

The Gemini CLI sends no header that is stable per session (its ``x-gemini-api-privileged-user-id``
is per installation, see docs/routing.md), so Gemini calls are sessionless (AFF-2) unless the client
sends a ``session_id`` / ``session-id`` header itself. The body is checked for the shape every
Gemini request has, so a malformed one is refused before any account is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import SubLaneError
from sublane_protocols._intent import CallIntent, require_model, text_key

_OBJECT_FIELDS = ("systemInstruction", "generationConfig", "toolConfig")
_LIST_FIELDS = ("tools", "safetySettings")


def generate_request(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``GenerateContentRequest`` of a body (``countTokens`` may nest it)."""
    nested = body.get("generateContentRequest")
    return nested if isinstance(nested, dict) else body


def check_generate_request(body: Mapping[str, Any]) -> None:
    """400 ``invalid_request`` naming the field when the body is not a Gemini request."""
    request = generate_request(body)
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        raise SubLaneError("invalid_request", "'contents' must be a non-empty list of Content objects.")
    for index, content in enumerate(contents):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            raise SubLaneError(
                "invalid_request", f"'contents[{index}]' must be an object with a 'parts' list."
            )
    for name in _OBJECT_FIELDS:
        if name in request and not isinstance(request[name], dict):
            raise SubLaneError("invalid_request", f"'{name}' must be an object.")
    for name in _LIST_FIELDS:
        if name in request and not isinstance(request[name], list):
            raise SubLaneError("invalid_request", f"'{name}' must be a list.")


def read_gemini_intent(
    headers: Mapping[str, str], body: Mapping[str, Any], path_model: str | None
) -> CallIntent:
    named = path_model.strip().removeprefix("models/") if isinstance(path_model, str) else path_model
    model = require_model(named)
    check_generate_request(body)
    key = text_key(headers.get("session_id")) or text_key(headers.get("session-id"))
    return CallIntent(model=model, stream=False, conversation_key=key, continuation=False)
