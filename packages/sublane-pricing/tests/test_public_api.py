"""The public surface of sublane-pricing changes only on purpose: update this list with the change."""

from __future__ import annotations

import sublane_pricing

EXPECTED = [
    "PriceBook", "InvalidPrice", "PRICE_FIELDS", "MAX_PRICE", "RELOAD_S",
    "PriceSource", "GenaiPrices", "model_names",
    "ModelPrices", "CallTokens", "call_cost",
    "SpendLedger", "REFRESH_S", "month_bounds",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_pricing.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(sublane_pricing, name), name
