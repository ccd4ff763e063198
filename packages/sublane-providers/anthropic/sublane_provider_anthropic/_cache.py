"""How long the Anthropic API keeps a prompt-cache prefix (COST-4): five minutes, refreshed on each
read, or an hour for a breakpoint marked ``"cache_control": {"type": "ephemeral", "ttl": "1h"}``.
Breakpoints sit on the system blocks, the tools and the latest messages, so only those are read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

CACHE_LIFETIME_S: Final = 300.0
CACHE_LIFETIME_1H_S: Final = 3600.0
_LATEST_MESSAGES: Final = 2


def _any_1h(blocks: Any) -> bool:
    return isinstance(blocks, list) and any(
        isinstance(block, dict)
        and isinstance(block.get("cache_control"), dict)
        and block["cache_control"].get("ttl") == "1h"
        for block in blocks
    )


def cache_lifetime_s(body: Mapping[str, Any]) -> float:
    """One hour when a breakpoint of the request asks for it, else five minutes."""
    if _any_1h(body.get("system")) or _any_1h(body.get("tools")):
        return CACHE_LIFETIME_1H_S
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages[-_LATEST_MESSAGES:]:
            if isinstance(message, dict) and _any_1h(message.get("content")):
                return CACHE_LIFETIME_1H_S
    return CACHE_LIFETIME_S
