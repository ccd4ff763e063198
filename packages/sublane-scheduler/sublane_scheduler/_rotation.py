"""New selections rotate round-robin per group among eligible accounts (AFF-5).

Cursors are process-local and start empty after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence

from sublane_scheduler._directory import AccountInfo
from sublane_scheduler._leases import Lease, LeaseTable


class RoundRobin:
    """Per-group cursors over candidate accounts; takes the first with a free slot."""

    def __init__(self, leases: LeaseTable) -> None:
        self._leases = leases
        self._cursors: dict[int, int] = {}

    def acquire(
        self, group_id: int, candidates: Sequence[AccountInfo], request_id: str, model: str
    ) -> Lease | None:
        """A lease on the next candidate after the group's cursor that has room, or ``None``."""
        count = len(candidates)
        if count == 0:
            return None
        start = self._cursors.get(group_id, 0)
        for step in range(count):
            account = candidates[(start + step) % count]
            lease = self._leases.try_acquire(account.id, account.max_concurrency, request_id, model)
            if lease is not None:
                self._cursors[group_id] = (start + step + 1) % count
                return lease
        return None
