"""The price book wired to the history writer (COST-2): each record priced from its token counts."""

from __future__ import annotations

from sublane_core import signals
from sublane_pricing import PriceBook


class RecordPricing:
    """:class:`sublane_history.RecordCosts` over a :class:`PriceBook`: the served model's price of the
    counts the upstream reported; ``None`` when the model is unpriced or a count is missing.

    ``reload=False`` (the budgets, on the request path) prices from what the book holds in memory
    and never reads the admins' prices from the database; the history writer's reads keep it fresh.
    """

    def __init__(self, book: PriceBook, *, reload: bool = True) -> None:
        self._book = book
        self._reload = reload

    def cost_usd(self, payload: signals.RequestFinished) -> float | None:
        input_tokens, output_tokens = payload.input_tokens, payload.output_tokens
        if input_tokens is None or output_tokens is None:
            return None
        return self._book.cost_usd(
            payload.served_model or payload.model,
            input_tokens,
            output_tokens,
            payload.cached_tokens or 0,
            payload.cache_write_tokens or 0,
            payload.cache_write_1h_tokens or 0,
            reload=self._reload,
        )
