"""PAID-2 through a real gateway: a group's metered routing in the management API, and an OpenAI
API key (a metered account, on the simulator's OpenAI API) beside a Codex subscription — used only
when the subscription cannot serve, recorded as ``routing.metered`` and ``overflow_reason``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from gateway_pool import Pool, recorded

from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}


def _served(pool: Pool) -> list[str]:
    """The provider of each served call, in order."""
    return [finished.provider or "" for finished in pool.finished if finished.outcome == "success"]


def test_paid_2_group_metered_routing_is_set_validated_audited_and_shown(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=0)
    admin = pool.admin
    shown = admin.get("/api/groups/1").json()
    assert (shown["metered"], shown["overflow_after_s"]) == ("overflow", 5)  # the defaults
    changed = admin.patch("/api/groups/1", json={"metered": "normal", "overflow_after_s": 12.5})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["metered"], changed.json()["overflow_after_s"]) == ("normal", 12.5)
    listed = admin.get("/api/groups").json()["items"][0]
    assert (listed["metered"], listed["overflow_after_s"]) == ("normal", 12.5)
    for bad in (
        {"metered": "sometimes"},
        {"metered": None},
        {"overflow_after_s": -1},
        {"overflow_after_s": 1e9},
        {"overflow_after_s": "5"},
        {"overflow_after_s": None},
    ):
        refused = admin.patch("/api/groups/1", json=bad)
        assert 400 <= refused.status_code < 500 and refused.status_code != 404, (bad, refused.text)
    assert admin.get("/api/groups/1").json()["metered"] == "normal"
    assert admin.get("/api/groups/999").status_code == 404
    billing = {item["name"]: item["billing"] for item in admin.get("/api/providers").json()["items"]}
    assert billing["openai"] == "metered" and billing["codex"] == "subscription"
    entries = admin.get("/api/audit").json()["items"]
    entry = next(item for item in entries if item["action"] == "group.update")
    assert "normal" in str(entry) and "12.5" in str(entry)


@pytest.fixture
def mixed(make_pool: Callable[..., Pool]) -> Pool:
    """One Codex subscription and one OpenAI API key in the default group."""
    pool = make_pool()
    pool.add_account("openai", "openai-key")
    return pool


def _routing(pool: Pool, index: int = -1) -> dict[str, Any]:
    routing = pool.finished[index].routing
    assert routing is not None
    return routing


def test_paid_2_overflow_uses_the_metered_account_only_when_the_subscription_cannot_serve(
    mixed: Pool,
) -> None:
    pool = mixed
    client = pool.client()
    for _ in range(3):
        assert client.post("/v1/responses", json=BODY).status_code == 200
    assert _served(pool) == ["codex"] * 3  # the subscription serves; the key is held back
    assert "metered" not in _routing(pool) and _routing(pool)["excluded"]["metered_held"] == 1
    pool.sim.set_default(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    )
    assert client.post("/v1/responses", json=BODY).status_code == 200  # moved on to the key (FAIL-1)
    assert client.post("/v1/responses", json=BODY).status_code == 200
    assert _served(pool)[-2:] == ["openai", "openai"]
    assert _routing(pool)["metered"] is True and _routing(pool)["overflow_reason"] == "all_cooling"
    records = recorded(pool, 5)
    moved = records[1]["routing"]  # met the 429, then served by the key (FAIL-1)
    assert moved["metered"] is True and moved["overflow_reason"] == "all_cooling"
    assert [attempt["error_code"] for attempt in moved["attempts"]] == ["rate_limit_exceeded", None]
    assert records[0]["routing"]["metered"] is True
    assert records[0]["routing"]["overflow_reason"] == "all_cooling"
    assert "metered" not in records[-1]["routing"]  # the subscription's calls say nothing of it


def test_paid_2_off_never_uses_the_metered_account_and_normal_rotates_through_it(mixed: Pool) -> None:
    pool = mixed
    client = pool.client()
    assert pool.admin.patch("/api/groups/1", json={"metered": "normal"}).status_code == 200
    for _ in range(4):
        assert client.post("/v1/responses", json=BODY).status_code == 200
    assert sorted(_served(pool)) == ["codex", "codex", "openai", "openai"]
    metered = next(f.routing for f in pool.finished if f.provider == "openai")
    assert metered is not None and metered["metered"] is True and metered["overflow_reason"] == "normal"
    assert pool.admin.patch("/api/groups/1", json={"metered": "off"}).status_code == 200
    pool.sim.set_default(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    )
    assert client.post("/v1/responses", json=BODY).status_code == 429
    refused = client.post("/v1/responses", json=BODY)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "account_cooling"
    assert _served(pool).count("openai") == 2  # never again while off


def test_paid_2_a_call_waiting_for_a_busy_subscription_overflows_after_overflow_after_s(mixed: Pool) -> None:
    pool = mixed
    codex = pool.account_ids[0]
    assert pool.admin.patch(f"/api/accounts/{codex}/limits", json={"max_concurrency": 1}).status_code == 200
    assert pool.admin.patch("/api/groups/1", json={"overflow_after_s": 0.3}).status_code == 200
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(header_delay_ms=2000))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(2) as workers:
        slow = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.3)
        started = time.monotonic()
        quick = pool.client().post("/v1/responses", json=BODY)
        waited = time.monotonic() - started
        assert quick.status_code == 200 and slow.result().status_code == 200
    assert 0.25 <= waited < 1.8  # it waited overflow_after_s, not until the subscription freed
    served = next(f for f in pool.finished if f.provider == "openai")
    assert served.routing is not None
    assert served.routing["metered"] is True and served.routing["overflow_reason"] == "waited"


def test_paid_2_off_says_why_a_model_only_metered_accounts_serve_is_not_served(
    make_pool: Callable[..., Pool],
) -> None:
    """With the group's metered routing `off`, a model only its metered accounts list is refused
    with a message naming the routing (an admin's setting), not as a model no account serves."""
    pool = make_pool(provider="openai")
    assert pool.admin.patch("/api/groups/1", json={"metered": "off"}).status_code == 200
    time.sleep(0.3)
    refused = pool.client().post("/v1/responses", json=BODY)
    assert refused.status_code == 404, refused.text
    error = refused.json()["error"]
    assert error["code"] == "model_not_found" and "metered" in error["message"], error
    assert "off" in error["message"]
