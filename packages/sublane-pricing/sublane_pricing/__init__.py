"""Model prices and the API-equivalent cost of a call (SPEC §32 COST-1).

:class:`PriceBook` answers a model's prices — an admin's override, else the built-in price from a
:class:`PriceSource` (:class:`GenaiPrices`, over the ``genai-prices`` library) — and a call's cost
(:func:`call_cost`). A model without a price is unpriced: its cost is ``None``, never 0. The gateway
wires the book to the history writer (each record's cost) and to the management API.
:class:`SpendLedger` sums metered accounts' cost per UTC month, group and member and answers whether
a caller is over a spend cap (PAID-3).
"""

from sublane_pricing._book import MAX_PRICE, PRICE_FIELDS, RELOAD_S, InvalidPrice, PriceBook
from sublane_pricing._builtin import GenaiPrices, PriceSource, model_names
from sublane_pricing._prices import CallTokens, ModelPrices, call_cost
from sublane_pricing._spend import REFRESH_S, SpendLedger, month_bounds

__version__ = "0.1.0"

__all__ = [
    "PriceBook",
    "InvalidPrice",
    "PRICE_FIELDS",
    "MAX_PRICE",
    "RELOAD_S",
    "PriceSource",
    "GenaiPrices",
    "model_names",
    "ModelPrices",
    "CallTokens",
    "call_cost",
    "SpendLedger",
    "REFRESH_S",
    "month_bounds",
]
