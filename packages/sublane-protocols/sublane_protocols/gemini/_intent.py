"""The intent of a Gemini ``generateContent`` call: the model is in the route, not the body.

Which header (if any) the Gemini CLI keeps stable per session is settled with the Antigravity
serving work; until then Gemini calls are sessionless (AFF-2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_protocols._intent import CallIntent, require_model


def read_gemini_intent(
    _headers: Mapping[str, str], _body: Mapping[str, Any], path_model: str | None
) -> CallIntent:
    named = path_model.strip().removeprefix("models/") if isinstance(path_model, str) else path_model
    return CallIntent(model=require_model(named), stream=False, conversation_key=None, continuation=False)
