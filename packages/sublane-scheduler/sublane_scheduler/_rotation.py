"""New selections rotate round-robin per group among eligible accounts (AFF-5).

Cursors are process-local and start empty after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sublane_scheduler._directory import AccountInfo
from sublane_scheduler._leases import Lease


class RoundRobin:
    """Per-group cursors over candidate accounts; takes the first one that admits the request."""

    def __init__(self) -> None:
        self._cursors: dict[int, int] = {}

    def acquire(
        self, group_id: int, candidates: Sequence[AccountInfo], take: Callable[[AccountInfo], Lease | None]
    ) -> Lease | None:
        """A lease on the next candidate after the group's cursor that ``take`` admits, or ``None``."""
        count = len(candidates)
        if count == 0:
            return None
        start = self._cursors.get(group_id, 0)
        for step in range(count):
            lease = take(candidates[(start + step) % count])
            if lease is not None:
                self._cursors[group_id] = (start + step + 1) % count
                return lease
        return None
