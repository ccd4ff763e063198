"""A name not taken yet: ``name``, else ``name-2``, ``name-3``… (SSO users, imported accounts)."""

from __future__ import annotations

from collections.abc import Collection

from sublane_core import SubLaneError


def free_name(name: str, taken: Collection[str], max_length: int) -> str:
    """``name`` (cut to ``max_length``) or the first free ``name-N``; ``taken`` holds lower-case names."""
    name = name[:max_length]
    if name.lower() not in taken:
        return name
    for number in range(2, 10_000):
        suffix = f"-{number}"
        candidate = name[: max_length - len(suffix)] + suffix
        if candidate.lower() not in taken:
            return candidate
    raise SubLaneError("name_taken")
