"""Deterministic generated text, so the same seed and request order give the same bytes."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["estimate_tokens", "sample_arguments", "split_evenly", "text_chunks"]

_WORDS = (
    "the", "simulated", "upstream", "answers", "with", "deterministic", "words", "so", "tests",
    "can", "compare", "streams", "byte", "for", "byte", "across", "runs", "and", "accounts",
    "while", "gateways", "relay", "every", "delta", "to", "their", "clients", "quickly",
)  # fmt: skip


def text_chunks(rng: random.Random, count: int, text: str | None = None) -> list[str]:
    """`count` text fragments: `text` split evenly, or seeded words (the first without a space)."""
    if text is not None:
        return split_evenly(text, count) if text else [""]
    words = [rng.choice(_WORDS) for _ in range(count)]
    return [words[0].capitalize()] + [" " + word for word in words[1:]]


def estimate_tokens(raw_body: bytes) -> int:
    """A stable stand-in for a tokenizer: four bytes of request JSON per token."""
    return max(1, len(raw_body) // 4)


def sample_arguments(schema: Any) -> dict[str, Any]:
    """Plausible arguments for a JSON-schema object: a value for each required property.

    Types may be Gemini's upper-case `Type` names (`STRING`, `OBJECT`, …) as well as JSON Schema's."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    required = schema.get("required") or list(properties)[:1]
    samples: dict[str, Any] = {"string": "sim", "integer": 1, "number": 1.5, "boolean": True, "array": []}
    arguments: dict[str, Any] = {}
    for name in required:
        spec = properties.get(name)
        kind = spec.get("type") if isinstance(spec, dict) else None
        arguments[name] = samples.get(kind.lower(), {}) if isinstance(kind, str) else "sim"
    return arguments


def split_evenly(text: str, parts: int) -> list[str]:
    """`text` in `parts` consecutive non-empty pieces (fewer when the text is shorter)."""
    parts = max(1, min(parts, len(text)))
    size, extra = divmod(len(text), parts)
    pieces: list[str] = []
    start = 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces
