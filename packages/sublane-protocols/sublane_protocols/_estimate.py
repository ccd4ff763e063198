"""A token count for an upstream that has no counting endpoint (the Codex backend).

An estimate, stated as one in docs/routing.md: about four characters of English text or JSON per
token (the rule of thumb OpenAI and Anthropic both publish), counted over the instructions, every
text, tool argument and tool output of the history and the tool definitions as JSON; each image or
file counts a flat ``MEDIA_TOKENS``, since its size in tokens depends on pixels the body does not
state. Always at least 1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

CHARS_PER_TOKEN = 4
MEDIA_TOKENS = 1_000
_MEDIA = frozenset({"input_image", "input_file", "image", "document"})
_TEXT_KEYS = ("text", "arguments", "input", "output", "instructions", "content")


def _walk(value: Any, totals: list[int]) -> None:
    if isinstance(value, str):
        totals[0] += len(value)
    elif isinstance(value, list):
        for item in value:
            _walk(item, totals)
    elif isinstance(value, Mapping):
        if isinstance(kind := value.get("type"), str) and kind in _MEDIA:
            totals[1] += 1
            return
        for key in _TEXT_KEYS:
            if key in value:
                _walk(value[key], totals)


def estimate_input_tokens(body: Mapping[str, Any]) -> int:
    """The estimated input tokens of a Responses (hub) body."""
    totals = [0, 0]  # characters, media parts
    _walk(body.get("instructions"), totals)
    _walk(body.get("input"), totals)
    tools = body.get("tools")
    if tools:
        totals[0] += len(json.dumps(tools, separators=(",", ":")))
    return max(1, math.ceil(totals[0] / CHARS_PER_TOKEN) + totals[1] * MEDIA_TOKENS)
