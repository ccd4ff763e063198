"""Type checks the real upstreams make on the fields they know: a malformed field gets a 400 from
them, never a 500, so the simulator refuses it the same way (and a gateway bug that forwards one
shows up as the client's 400, not as an upstream failure that cools a model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: JSON type names, as the upstreams' messages write them.
_NAMES: Final = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, Mapping) else "unknown"


def type_problem(
    body: Mapping[str, Any], expected: Mapping[str, tuple[str, ...]]
) -> tuple[str, str, str] | None:
    """``(field, expected, got)`` for the first field of ``expected`` that ``body`` has with another
    type (``null`` always passes: "not set"); ``None`` when all fit."""
    for name, kinds in expected.items():
        if name not in body:
            continue
        got = json_type(body[name])
        if got == "null" or got in kinds or (got == "integer" and "number" in kinds):
            continue
        return name, " or ".join(_NAMES[kind] for kind in kinds), _NAMES.get(got, got)
    return None


CODEX_TYPES: Final = {
    "instructions": ("string",),
    "reasoning": ("object",),
    "text": ("object",),
    "tools": ("array",),
    "tool_choice": ("string", "object"),
    "parallel_tool_calls": ("boolean",),
    "include": ("array",),
    "temperature": ("number",),
    "top_p": ("number",),
    "max_output_tokens": ("integer",),
    "prompt_cache_key": ("string",),
}

CLAUDE_TYPES: Final = {
    "system": ("string", "array"),
    "temperature": ("number",),
    "top_p": ("number",),
    "top_k": ("integer",),
    "stop_sequences": ("array",),
    "tools": ("array",),
    "tool_choice": ("object",),
    "thinking": ("object",),
    "metadata": ("object",),
    "output_config": ("object",),
    "stream": ("boolean",),
}

GEMINI_TYPES: Final = {
    "systemInstruction": ("object",),
    "generationConfig": ("object",),
    "tools": ("array",),
    "toolConfig": ("object",),
    "safetySettings": ("array",),
}
