"""How long Anthropic keeps a prompt-cache prefix (COST-4).

Anthropic documents a 5-minute lifetime, refreshed each time the prefix is read, and a 1-hour one
for a breakpoint marked ``"cache_control": {"type": "ephemeral", "ttl": "1h"}``. Breakpoints sit
on the system blocks, the tools and the latest messages (at most four per request), so only those
are looked at: the scan costs the same for a long conversation as for a short one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

CACHE_LIFETIME_S: Final = 300.0
CACHE_LIFETIME_1H_S: Final = 3600.0
_LATEST_MESSAGES: Final = 2


def _asks_1h(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    control = block.get("cache_control")
    return isinstance(control, dict) and control.get("ttl") == "1h"


def _any_1h(blocks: Any) -> bool:
    return isinstance(blocks, list) and any(_asks_1h(block) for block in blocks)


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
