"""What a record costs (COST-2), asked of the gateway's price book through an interface of our own.

The history writer thread asks it once per written attempt, in the background, with the prices of
that moment; the request path never does. ``None``: the model is unpriced or the attempt reported no
usage (its cost is unknown, never 0).
"""

from __future__ import annotations

from typing import Protocol

from sublane_core import signals


class RecordCosts(Protocol):
    """The API-equivalent cost of one finished attempt in US dollars, or ``None`` when unpriced."""

    def cost_usd(self, payload: signals.RequestFinished) -> float | None: ...
