"""HIST-10: the cache hit rate, one shared function for the API and the web views."""

from __future__ import annotations

import pytest

from sublane_history import NO_RATE, cache_hit_rate


@pytest.mark.parametrize(
    ("input_tokens", "cached_tokens", "shown"),
    [
        (1000, 875, "87.5%"),
        (1000, 500, "50%"),  # a whole number has no decimal
        (3, 1, "33.3%"),
        (3, 2, "66.7%"),  # rounded half up to one decimal
        (2000, 1, "0.1%"),  # 0.05 % rounds half up
        (200_000, 1, "0.1%"),  # some cache is never shown as none
        (10_000, 9_999, "99.9%"),  # and a near-miss is never shown as a full hit
        (4096, 4096, "100%"),
        (1000, 0, "0%"),
    ],
)
def test_hist_10_percentage_with_at_most_one_decimal(
    input_tokens: int, cached_tokens: int, shown: str
) -> None:
    assert cache_hit_rate(input_tokens, cached_tokens) == shown


@pytest.mark.parametrize(
    ("input_tokens", "cached_tokens"),
    [(None, None), (None, 10), (1000, None), (0, 0), (0, 5), (100, 101), (100, -1), (-5, 0)],
)
def test_hist_10_em_dash_when_counts_are_missing_input_is_zero_or_cached_exceeds_input(
    input_tokens: int | None, cached_tokens: int | None
) -> None:
    assert cache_hit_rate(input_tokens, cached_tokens) == NO_RATE == "—"


def test_hist_10_the_docstring_example_holds() -> None:
    assert (cache_hit_rate(1000, 875), cache_hit_rate(3, 1), cache_hit_rate(2, 2), cache_hit_rate(0, 0)) == (
        "87.5%",
        "33.3%",
        "100%",
        "—",
    )
