"""COST-1: the cost formula, the built-in prices and admins' overrides on a real, migrated SQLite file."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from sublane_core import FakeClock, create_db_engine, upgrade_database
from sublane_pricing import CallTokens, GenaiPrices, InvalidPrice, ModelPrices, PriceBook, call_cost


def _prices(**values: str | None) -> ModelPrices:
    def number(name: str) -> Decimal | None:
        value = values.get(name)
        return None if value is None else Decimal(value)

    return ModelPrices(
        model="m",
        input=Decimal(values.get("input") or "0"),
        output=Decimal(values.get("output") or "0"),
        cached_input=number("cached_input"),
        cache_write_5m=number("cache_write_5m"),
        cache_write_1h=number("cache_write_1h"),
        source="admin",
        as_of=None,
    )


def test_cost_1_formula_prices_each_kind_of_token() -> None:
    prices = _prices(input="3", cached_input="0.3", cache_write_5m="3.75", cache_write_1h="6", output="15")
    tokens = CallTokens(
        input=10_000, output=2_000, cached_input=4_000, cache_write=3_000, cache_write_1h=1_000
    )
    # (10000 − 4000 − 3000) × 3 + 4000 × 0.3 + 2000 × 3.75 + 1000 × 6 + 2000 × 15, per million
    expected = Decimal(3000 * 3 + 4000 * 0.3 + 2000 * 3.75 + 1000 * 6 + 2000 * 15) / 1_000_000
    assert call_cost(prices, tokens) == expected.quantize(Decimal("0.000000001"))
    # a kind without its own price costs what input costs
    assert call_cost(_prices(input="2", output="4"), tokens) == Decimal("0.028")  # 10000 × 2 + 2000 × 4


def test_cost_1_built_in_prices_cover_the_served_models_and_unknown_is_unpriced() -> None:
    source = GenaiPrices()
    assert source.version == "0.2.3" and source.released == "2026-11-10"
    for model in ("gpt-5.3-codex", "gpt-5.5", "claude-opus-4-6", "claude-sonnet-4-5", "gemini-3-pro-high"):
        prices = source.prices(model)
        assert prices is not None and prices.input > 0 and prices.output > 0, model
    claude = source.prices("claude-sonnet-4-5")
    assert claude is not None
    assert (claude.cached_input, claude.cache_write_5m, claude.cache_write_1h) == (
        Decimal("0.3"),
        Decimal("3.75"),
        Decimal("6"),
    )
    assert source.prices("no-such-model-anywhere") is None


@pytest.fixture
def book(tmp_path: Path) -> PriceBook:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'sublane.db'}")
    upgrade_database(engine)
    return PriceBook(engine, FakeClock(), GenaiPrices())


def test_cost_1_admin_override_wins_and_delete_restores_the_built_in(book: PriceBook) -> None:
    built_in = book.prices("gpt-5.5")
    assert built_in is not None and built_in.source == "built-in"
    book.set("gpt-5.5", book.validate("gpt-5.5", {"input": 1, "output": "2.5"}))
    override = book.prices("gpt-5.5")
    assert override is not None and override.source == "admin" and override.as_of is not None
    assert book.cost(
        "gpt-5.5", CallTokens(input=1_000_000, output=1_000_000, cached_input=500_000)
    ) == Decimal("3.5")
    book.set("house-model", book.validate("house-model", {"input": 1, "output": 1}))
    assert [p.model for p in book.listing(["gpt-5.5", "no-such-model"])] == ["gpt-5.5", "house-model"]
    assert book.delete("gpt-5.5") is True and book.delete("gpt-5.5") is False
    assert book.prices("gpt-5.5") == built_in
    assert book.cost("no-such-model", CallTokens(input=5, output=5)) is None


@pytest.mark.parametrize(
    "body",
    [{"output": 1}, {"input": 1}, {"input": -1, "output": 1}, {"input": "x", "output": 1},
     {"input": True, "output": 1}, {"input": 1, "output": 1, "extra": 2}, {"input": 1e9, "output": 1},
     {"input": "nan", "output": 1}],
)  # fmt: skip
def test_cost_1_invalid_prices_are_refused(book: PriceBook, body: dict[str, object]) -> None:
    with pytest.raises(InvalidPrice):
        book.validate("m", body)


def test_cost_1_the_float_cost_records_use_matches_the_decimal_formula(book: PriceBook) -> None:
    book.set("m", book.validate("m", {"input": 3, "cached_input": 0.3, "cache_write_5m": 3.75,
                                      "cache_write_1h": 6, "output": 15}))  # fmt: skip
    for counts in (
        (10_000, 2_000, 4_000, 3_000, 1_000),
        (100, 20, 0, 0, 0),
        (5, 5, 50, 0, 0),
        (0, 7, 0, 0, 0),
    ):
        tokens = CallTokens(
            input=counts[0],
            output=counts[1],
            cached_input=counts[2],
            cache_write=counts[3],
            cache_write_1h=counts[4],
        )
        assert book.cost_usd("m", *counts) == pytest.approx(float(book.cost("m", tokens) or 0), abs=1e-9)
    assert book.cost_usd("unknown-model", 10, 10) is None


def test_cost_1_built_in_data_loads_once_whatever_thread_asks_first() -> None:
    """The writer thread and the event loop may ask at once: one loads, the others wait for it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    source = GenaiPrices()
    before = source.loaded
    assert not before
    start = threading.Barrier(6)

    def ask(model: str) -> ModelPrices | None:
        start.wait()
        return source.prices(model)

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(ask, ["gpt-5", "claude-sonnet-4-5"] * 3))
    assert source.loaded
    assert all(answer is not None for answer in answers)
    assert answers[0::2] == [answers[0]] * 3 and answers[1::2] == [answers[1]] * 3
