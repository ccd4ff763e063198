"""The cache hit rate of HIST-10, derived at display time (no stored column), for the API and the web."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Final

NO_RATE: Final = "—"  # em dash: no meaningful rate
_TENTH = Decimal("0.1")
_LOWEST = Decimal("0.1")
_HIGHEST = Decimal("99.9")


def cache_hit_rate(input_tokens: int | None, cached_tokens: int | None) -> str:
    """Cached input tokens ÷ total input tokens, as a percentage with at most one decimal.

    ``"0%"`` when nothing was cached from a non-empty input; an em dash when either count is
    missing, the input is 0, or the counts contradict each other (cached > input, or negative).
    ``"100%"`` and ``"0%"`` are kept for exact values: any other ratio shows between ``"0.1%"`` and
    ``"99.9%"``, so rounding never claims a full hit or a full miss that did not happen.

    >>> cache_hit_rate(1000, 875), cache_hit_rate(3, 1), cache_hit_rate(2, 2), cache_hit_rate(0, 0)
    ('87.5%', '33.3%', '100%', '—')
    """
    if input_tokens is None or cached_tokens is None:
        return NO_RATE
    if input_tokens <= 0 or cached_tokens < 0 or cached_tokens > input_tokens:
        return NO_RATE
    if cached_tokens == 0:
        return "0%"
    if cached_tokens == input_tokens:
        return "100%"
    percent = (Decimal(cached_tokens) * 100 / Decimal(input_tokens)).quantize(_TENTH, ROUND_HALF_UP)
    percent = min(max(percent, _LOWEST), _HIGHEST)
    text = f"{percent:f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


MISS_REASONS: Final = ("first_turn", "account_changed", "prefix_changed", "expired", "unknown")
"""Why a later turn of a conversation mostly missed the upstream's prompt cache (COST-4)."""

MISS_BELOW: Final = 0.5
"""A turn whose hit rate is under this has a miss reason (COST-4)."""


def hit_rate(input_tokens: int | None, cached_tokens: int | None) -> float | None:
    """COST-4's ``cache.hit_rate``: cached input ÷ input (input as the upstream counts it, cached
    included), or ``None`` when the upstream reported no cache figures — never 0 for "no data".

    Counts that contradict each other (cached > input, negative) or an empty input give ``None``
    too, like HIST-10's em dash.

    >>> hit_rate(1000, 875), hit_rate(1000, 0), hit_rate(1000, None), hit_rate(0, 0)
    (0.875, 0.0, None, None)
    """
    if input_tokens is None or cached_tokens is None:
        return None
    if input_tokens <= 0 or cached_tokens < 0 or cached_tokens > input_tokens:
        return None
    return cached_tokens / input_tokens


def weighted_hit_rate(input_tokens: int | None, cached_tokens: int | None) -> float | None:
    """Σcached ÷ Σinput over the attempts with cache figures, rounded to 4 decimals; ``None`` when
    none had any (a summary's hit rate, COST-4)."""
    rate = hit_rate(input_tokens, cached_tokens)
    return None if rate is None else round(rate, 4)
