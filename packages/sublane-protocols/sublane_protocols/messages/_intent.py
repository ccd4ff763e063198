"""The intent of an Anthropic Messages call (AFF-1 for Anthropic clients)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sublane_protocols._intent import CallIntent, require_model, text_key

_LEGACY_SESSION = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


def anthropic_conversation_key(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """``X-Claude-Code-Session-Id``, else the session in ``metadata.user_id``.

    Claude Code 2.x sends ``user_id`` as a JSON string holding ``session_id``; older versions end
    it with ``_session_<uuid>``.
    """
    header = text_key(headers.get("x-claude-code-session-id"))
    if header is not None:
        return header
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str) or not user_id:
        return None
    try:
        parsed = json.loads(user_id)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        session = text_key(parsed.get("session_id"))
        if session is not None:
            return session
    match = _LEGACY_SESSION.search(user_id)
    return match.group(1) if match else None


def read_anthropic_intent(
    headers: Mapping[str, str], body: Mapping[str, Any], _path_model: str | None
) -> CallIntent:
    return CallIntent(
        model=require_model(body.get("model")),
        stream=body.get("stream") is True,
        conversation_key=anthropic_conversation_key(headers, body),
        continuation=False,
    )
