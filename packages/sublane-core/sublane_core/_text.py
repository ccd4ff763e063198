"""Text that can always be stored and sent: lone surrogates replaced, JSON depth bounded (OPS-1)."""

from __future__ import annotations

from typing import Any

MAX_JSON_DEPTH = 256


def storable_text(value: str) -> str:
    """``value`` encodable as UTF-8: lone surrogates (``"\\ud800"``) become ``"?"``; others unchanged."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def json_problem(value: Any, max_depth: int = MAX_JSON_DEPTH, *, text: bool = True) -> str | None:
    """Why a parsed JSON value cannot be served, or ``None``: too deeply nested, or a lone surrogate.

    Iterative (no recursion), so the check itself cannot overflow the stack. ``text=False`` checks
    only the depth (and skips every string).
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return "The body holds a lone UTF-16 surrogate, which is not valid Unicode text."
        elif isinstance(item, dict | list):
            if depth > max_depth:
                return f"The body nests deeper than {max_depth} levels."
            values = item.values() if isinstance(item, dict) else item
            for child in values:
                if isinstance(child, dict | list) or (text and isinstance(child, str)):
                    stack.append((child, depth + 1))
            if text and isinstance(item, dict):
                for key in item:
                    if not _encodable(key):
                        return "The body holds a lone UTF-16 surrogate, which is not valid Unicode text."
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
