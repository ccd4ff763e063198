"""What a record costs (COST-2), asked of the gateway's price book through an interface of our own.

The history writer thread asks it once per written attempt, in the background, with the prices of
that moment; the request path never does. ``None``: the model is unpriced or the attempt reported no
usage (its cost is unknown, never 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import sqlalchemy as sa

from sublane_core import signals


class RecordCosts(Protocol):
    """The API-equivalent cost of one finished attempt in US dollars, or ``None`` when unpriced."""

    def cost_usd(self, payload: signals.RequestFinished) -> float | None: ...


class CostLedger(Protocol):
    """Something that adds the written attempts' costs to tables of its own in the transaction that
    writes their records (PAID-3's metered spend ledger), so its sums hold exactly the attempts
    written, once each."""

    def add(
        self,
        connection: sa.Connection,
        payloads: Sequence[signals.RequestFinished],
        costs: Sequence[float | None],
    ) -> None:
        """Add a batch (each attempt's cost, ``None`` where unknown) in the caller's transaction."""
        ...

    def committed(self) -> None:
        """The transaction of the last :meth:`add` is committed."""
        ...

    def rolled_back(self) -> None:
        """The transaction of the last :meth:`add` failed (nothing it wrote is stored)."""
        ...
