"""A model's prices and a call's cost (COST-1): the formula, with nothing of where prices come from."""

from __future__ import annotations

from decimal import Decimal
from typing import Final, Literal

from sublane_core import immutable

PER_MILLION: Final = Decimal(1_000_000)
#: A cost is kept to a billionth of a dollar: far below a cent, far above float noise.
COST_PLACES: Final = Decimal("0.000000001")
Source = Literal["built-in", "admin"]


@immutable
class ModelPrices:
    """US dollars per million tokens of one model. ``None`` where no price exists: a cached input
    or cache write without its own price costs what input costs."""

    model: str
    input: Decimal
    output: Decimal
    cached_input: Decimal | None
    cache_write_5m: Decimal | None
    cache_write_1h: Decimal | None
    source: Source
    as_of: str | None  # the ISO date the price was set (admin) or its price data was released

    def view(self) -> dict[str, object]:
        """The ``GET /api/prices`` item: prices as numbers (dollars per million tokens)."""
        return {
            "model": self.model,
            "input": _number(self.input),
            "cached_input": _number(self.cached_input),
            "cache_write_5m": _number(self.cache_write_5m),
            "cache_write_1h": _number(self.cache_write_1h),
            "output": _number(self.output),
            "source": self.source,
            "as_of": self.as_of,
        }


@immutable
class CallTokens:
    """A call's token counts as the upstream counts them: ``input`` includes the cached input and
    the cache writes; ``output`` includes reasoning. ``cache_write_1h`` is the part of
    ``cache_write`` written for one hour (the rest for five minutes)."""

    input: int
    output: int
    cached_input: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0


def call_cost(prices: ModelPrices, tokens: CallTokens) -> Decimal:
    """(input − cached − writes) × input + cached × cached price + writes × their price (5 m / 1 h)
    + output × output price, per million tokens. Inconsistent counts (more cached than input) are
    clamped, never negative."""
    cached = min(max(tokens.cached_input, 0), max(tokens.input, 0))
    written = min(max(tokens.cache_write, 0), max(tokens.input, 0) - cached)
    hour = min(max(tokens.cache_write_1h, 0), written)
    fresh = max(tokens.input, 0) - cached - written
    base = prices.input
    total = (
        fresh * base
        + cached * (prices.cached_input if prices.cached_input is not None else base)
        + (written - hour) * (prices.cache_write_5m if prices.cache_write_5m is not None else base)
        + hour * (prices.cache_write_1h if prices.cache_write_1h is not None else base)
        + max(tokens.output, 0) * prices.output
    )
    return (total / PER_MILLION).quantize(COST_PLACES)


def _number(value: Decimal | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if value == value.to_integral_value() else float(value)
