"""The prompt-cache model that makes account affinity measurable."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["PromptCache"]


class PromptCache:
    """Remembers, per (account, affinity key), how many prompt tokens the last request had.

    A repeat of the same affinity key on the same account reports that many tokens as cached
    (capped at the new prompt size); the same key on another account reports none, as a real
    upstream's per-account cache would. Bounded LRU so long benchmarks cannot grow it forever.
    """

    def __init__(self, capacity: int = 100_000) -> None:
        self._entries: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._capacity = capacity

    def lookup(self, account_id: str, key: str | None, prompt_tokens: int) -> int:
        """Cached tokens for this request; also records it for the next one."""
        if not key:
            return 0
        entry = (account_id, key)
        previous = self._entries.pop(entry, None)
        self._entries[entry] = prompt_tokens
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return 0 if previous is None else min(previous, prompt_tokens)

    def clear(self) -> None:
        self._entries.clear()
