"""New selections rotate per group among eligible accounts (AFF-5), uniformly or by quota (QW-1).

Cursors are process-local and start empty after a restart; with shared limits (SCALE-2) the uniform
cursor is Redis's, one per group for every replica.

Quota-weighted rotation is a smooth weighted round-robin (the one nginx uses): each account's
credit grows by its weight on every selection and the chosen one pays back the total, so over
any run of selections each account's share tracks its weight closely and deterministically,
without long runs on one account. An account that cannot take the request is passed over for
the next best credit; the credits of a group are kept while the candidate set stays the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sublane_scheduler._directory import AccountInfo
from sublane_scheduler._leases import Lease

#: The least weight an account with positive remaining quota gets, so it is still tried sometimes.
MIN_WEIGHT = 0.01


class RoundRobin:
    """Per-group cursors over candidate accounts; takes the first one that admits the request."""

    def __init__(self) -> None:
        self._cursors: dict[int, int] = {}
        self._credits: dict[int, dict[int, float]] = {}  # group → account → smooth WRR credit

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

    def acquire_weighted(
        self,
        group_id: int,
        candidates: Sequence[AccountInfo],
        weights: Sequence[float],
        take: Callable[[AccountInfo], Lease | None],
    ) -> Lease | None:
        """A lease chosen in proportion to ``weights`` (the candidates' remaining quota, QW-1)."""
        if not candidates:
            return None
        for index in self.weighted_order(group_id, candidates, weights):
            lease = take(candidates[index])
            if lease is not None:
                self.weighted_settle(group_id, candidates, weights, index)
                return lease
        self.weighted_settle(group_id, candidates, weights, None)
        return None

    def weighted_order(
        self, group_id: int, candidates: Sequence[AccountInfo], weights: Sequence[float]
    ) -> list[int]:
        """The candidates' indexes in the order to try for this selection (its credits granted)."""
        credits = self._credits.get(group_id)
        ids = {account.id for account in candidates}
        if credits is None or set(credits) != ids:
            credits = self._credits[group_id] = dict.fromkeys(ids, 0.0)
        for account, share in zip(candidates, _shares(weights), strict=True):
            credits[account.id] += share
        return sorted(range(len(candidates)), key=lambda index: (-credits[candidates[index].id], index))

    def weighted_settle(
        self, group_id: int, candidates: Sequence[AccountInfo], weights: Sequence[float], taken: int | None
    ) -> None:
        """After :meth:`weighted_order`: the taken candidate pays the round back; none taken, the
        round is undone."""
        credits = self._credits[group_id]
        shares = _shares(weights)
        if taken is not None:
            credits[candidates[taken].id] -= sum(shares)
            return
        for account, share in zip(candidates, shares, strict=True):
            credits[account.id] -= share


def _shares(weights: Sequence[float]) -> list[float]:
    return [max(weight, MIN_WEIGHT) for weight in weights]
