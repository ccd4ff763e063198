"""When the price book reads its built-in data (issue #49): a default start does not; the history
writer's first priced record does (COST-2, off the request's path); a deployment whose request path
prices calls — a metered account (PAID-3's ``unpriced_model`` check) or a dollar budget (COST-5) —
has it read at start, or in the background as soon as one is added. Real gateways, the simulator.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway_pool import Pool, recorded

from sublane_gateway._price_loading import PriceLoading
from sublane_pricing import GenaiPrices, PriceBook


def _loaded(pool: Pool) -> bool:
    book: PriceBook = pool.gateway.app.state["prices"]
    source = book.source
    assert isinstance(source, GenaiPrices)
    return source.loaded


def _soon_loaded(pool: Pool) -> bool:
    deadline = time.monotonic() + 10
    while not _loaded(pool) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _loaded(pool)


def test_cost_2_price_data_read_by_the_first_priced_record_not_at_start(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()  # subscription accounts only, no budget
    assert not _loaded(pool)
    body = {"model": "gpt-5-codex", "input": "hi", "stream": False}
    response = pool.client().post("/v1/responses", json=body)
    assert response.status_code == 200, response.text
    [record] = recorded(pool, 1)
    assert record["usage"]["cost_usd"] is not None and record["usage"]["cost_usd"] > 0
    assert _loaded(pool)


def test_paid_3_price_data_read_as_soon_as_a_metered_account_is_added(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0)
    assert not _loaded(pool)
    pool.add_account("openai", "metered-1")
    assert _soon_loaded(pool)  # before any call: PAID-3's check at admission prices from memory


def test_paid_3_price_data_read_at_start_when_a_metered_account_exists(
    make_pool: Callable[..., Pool],
) -> None:
    metered, subscribed = make_pool(provider="openai"), make_pool()
    for pool, expected in ((metered, True), (subscribed, False)):
        engine = pool.gateway.engine
        book = PriceBook(engine, pool.gateway.clock, GenaiPrices())
        source = book.source
        assert isinstance(source, GenaiPrices)
        assert PriceLoading(book, engine).at_start() is expected
        assert source.loaded is expected


def test_cost_5_price_data_read_as_soon_as_a_dollar_budget_is_set(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    bob, _key = pool.member_key("bob")
    rules = {"rules": [{"period": "day", "unit": "tokens", "limit": 1000}]}
    assert pool.admin.put(f"/api/users/{bob['id']}/budgets", json=rules).status_code == 200
    time.sleep(0.2)
    assert not _loaded(pool)  # a token budget prices nothing
    rules = {"rules": [{"period": "day", "unit": "usd", "limit": 5}]}
    answer = pool.admin.put(f"/api/users/{bob['id']}/budgets", json=rules)
    assert answer.status_code == 200, answer.text
    assert _soon_loaded(pool)
