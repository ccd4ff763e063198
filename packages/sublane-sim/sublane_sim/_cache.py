"""The prompt-cache model that makes account affinity measurable."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["CACHE_LIFETIME_S", "PromptCache"]

#: How long an unused prefix stays cached: the 5 minutes the upstreams document (Anthropic's
#: default, OpenAI's "5 to 10 minutes of inactivity"); a request may ask for longer (Anthropic's
#: ``"ttl": "1h"``).
CACHE_LIFETIME_S = 300.0


class PromptCache:
    """Remembers, per (account, affinity key), how many prompt tokens the last request had and
    until when that prefix stays cached.

    A repeat of the same affinity key on the same account within the prefix's lifetime reports
    that many tokens as cached (capped at the new prompt size); the same key on another account,
    or after the lifetime ran out unused, reports none, as a real upstream's per-account cache
    would. Each use renews the lifetime. Bounded LRU so long benchmarks cannot grow it forever.
    """

    def __init__(self, capacity: int = 100_000) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()
        self._capacity = capacity

    def lookup(
        self,
        account_id: str,
        key: str | None,
        prompt_tokens: int,
        now: float = 0.0,
        lifetime_s: float = CACHE_LIFETIME_S,
    ) -> int:
        """Cached tokens for this request at ``now``; also records it for the next one."""
        if not key:
            return 0
        entry = (account_id, key)
        previous = self._entries.pop(entry, None)
        self._entries[entry] = (prompt_tokens, now + lifetime_s)
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        if previous is None or now > previous[1]:
            return 0
        return min(previous[0], prompt_tokens)

    def clear(self) -> None:
        self._entries.clear()
