"""PAID-3: spend caps on metered use — the caps through the API (validated, audited, shown), the
month's metered spend summed from the records the history writer stores, and the answers selection
asks (``SpendLedger.blocked``), on a real gateway with the simulator's OpenAI API (the metered
``openai`` provider, PAID-1) and its Codex subscription accounts.

The refusal a client sees (429 ``metered_budget_exhausted``, 400 ``unpriced_model``) comes from the
scheduler's eligibility asking ``blocked()`` (PAID-2's hook): its test is where that is wired.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from gateway_pool import Pool, recorded, settings_for
from postgres_server import running_postgres
from redis_server import REDIS_SERVER, running_redis
from replicas import cluster
from sqlalchemy.engine import Engine

from sublane_core import Outcome, SystemClock, create_db_engine, signals
from sublane_gateway.testing import MEMBER_PASSWORD, running_gateway
from sublane_pricing import GenaiPrices, PriceBook, SpendLedger
from sublane_sim import Behaviour, Simulator

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": False}
METERED_BODY = {"model": "gpt-5", "input": "say hi", "stream": False}  # the openai provider's


def _next_month() -> int:
    today = dt.datetime.now(dt.UTC).date()
    return int(
        dt.datetime(today.year + today.month // 12, today.month % 12 + 1, 1, tzinfo=dt.UTC).timestamp()
    )


def _bad(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and "metered_monthly_usd" in error["message"], error


def _call(pool: Pool, key: str, body: dict[str, Any] = METERED_BODY, **counts: int) -> None:
    if counts:
        for account in pool.sim_accounts:
            pool.sim.script(account.id, Behaviour.ok(**counts))
    response = pool.client(key).post("/v1/responses", json=body)
    assert response.status_code == 200, response.text


def _group(pool: Pool) -> dict[str, Any]:
    [group] = [item for item in pool.admin.get("/api/groups").json()["items"] if item["id"] == 1]
    return group


def _audit(pool: Pool, action: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = pool.admin.get("/api/audit", params={"action": action}).json()["items"]
    return entries


def test_paid_3_group_cap_is_validated_audited_and_shown(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    group = _group(pool)
    assert (group["metered_monthly_usd"], group["metered_spent_usd"]) == (None, 0.0)
    assert group["metered_reset_at"] == _next_month()
    changed = pool.admin.patch("/api/groups/1", json={"metered_monthly_usd": 12.5})
    assert changed.status_code == 200, changed.text
    assert changed.json()["metered_monthly_usd"] == 12.5 and _group(pool)["metered_monthly_usd"] == 12.5
    for value in (-1, "5", True, 2e9, {"usd": 5}):
        _bad(pool.admin.patch("/api/groups/1", json={"metered_monthly_usd": value}))
    assert _group(pool)["metered_monthly_usd"] == 12.5  # bad input changed nothing
    assert (
        pool.admin.patch("/api/groups/1", json={"metered_monthly_usd": 0}).json()["metered_monthly_usd"] == 0
    )
    assert (
        pool.admin.patch("/api/groups/1", json={"metered_monthly_usd": None}).json()["metered_monthly_usd"]
        is None
    )
    assert pool.admin.patch("/api/groups/1", json={"name": "default"}).status_code == 200
    entries = _audit(pool, "group.update")
    changes = [entry["summary"].get("metered_monthly_usd") for entry in entries]
    assert {"from": 12.5, "to": 0} in changes and {"from": 0, "to": None} in changes, entries
    _bob, member = pool.gateway.member(pool.admin, "bob")
    assert member.patch("/api/groups/1", json={"metered_monthly_usd": 1}).status_code == 403


def test_paid_3_member_limit_is_validated_audited_and_shown_to_the_member(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    bob, _key = pool.member_key("bob")
    url = f"/api/users/{bob['id']}/limits"
    assert pool.admin.get(url).json()["metered_monthly_usd"] is None
    changed = pool.admin.patch(url, json={"metered_monthly_usd": 3})
    assert changed.status_code == 200, changed.text
    assert (changed.json()["metered_monthly_usd"], changed.json()["metered_spent_usd"]) == (3, 0.0)
    for value in (-0.01, "3", False, [1]):
        _bad(pool.admin.patch(url, json={"metered_monthly_usd": value}))
    _bad(pool.admin.patch(url, json={"rpm": 5, "metered_monthly_usd": -1}))
    assert pool.admin.get(url).json()["rpm"] == 0  # nothing half-written
    mine = pool.gateway.login("bob", MEMBER_PASSWORD).get("/api/me/limits").json()
    assert (mine["metered_monthly_usd"], mine["metered_spent_usd"]) == (3, 0.0)
    assert mine["metered_reset_at"] == _next_month()
    assert pool.admin.patch(url, json={"rpm": 10}).json()["metered_monthly_usd"] == 3  # left as it was
    assert pool.admin.patch(url, json={"metered_monthly_usd": None}).json()["metered_monthly_usd"] is None
    summaries = [entry["summary"] for entry in _audit(pool, "user.limits")]
    assert any(summary.get("metered_monthly_usd") == 3 for summary in summaries), summaries


def test_paid_3_metered_spend_is_summed_from_records_and_blocks_at_the_caps(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="openai")
    bob, key = pool.member_key("bob")
    ledger = pool.gateway.app.state["metered_spend"]
    assert ledger.blocked(1, bob["id"], "gpt-5") is None
    assert ledger.blocked(1, bob["id"], "no-price-anywhere-model") == ("unpriced_model", None)
    priced = pool.admin.put("/api/prices/no-price-anywhere-model", json={"input": 1, "output": 2})
    assert priced.status_code == 200, priced.text
    assert ledger.blocked(1, bob["id"], "no-price-anywhere-model") is None  # until an admin prices it
    _call(pool, key)
    _call(pool, key, body={**METERED_BODY, "input": "say hi " * 2000})
    records = recorded(pool, 2)
    assert {record["provider"] for record in records} == {"openai"}
    spent = sum(record["usage"]["cost_usd"] for record in records)
    assert spent > 0
    assert _group(pool)["metered_spent_usd"] == pytest.approx(spent, abs=1e-9)
    assert pool.admin.get(f"/api/users/{bob['id']}/limits").json()["metered_spent_usd"] == pytest.approx(
        spent, abs=1e-9
    )
    # the member's cap: bob's metered accounts are not eligible until the next UTC month
    pool.admin.patch(f"/api/users/{bob['id']}/limits", json={"metered_monthly_usd": spent})
    assert ledger.blocked(1, bob["id"], "gpt-5") == ("metered_budget_exhausted", float(_next_month()))
    admin_id = pool.admin.get("/api/me").json()["user"]["id"]
    assert ledger.blocked(1, admin_id, "gpt-5") is None  # bob's limit is bob's
    pool.admin.patch(f"/api/users/{bob['id']}/limits", json={"metered_monthly_usd": spent * 2})
    assert ledger.blocked(1, bob["id"], "gpt-5") is None
    # the group's cap holds for everyone in it
    pool.admin.patch("/api/groups/1", json={"metered_monthly_usd": spent - 0.000001})
    assert ledger.blocked(1, admin_id, "gpt-5") == ("metered_budget_exhausted", float(_next_month()))
    usage = pool.client(key).get("/v1/usage").json()["metered"]
    assert usage["member"] == {"limit_usd": spent * 2, "spent_usd": pytest.approx(spent, abs=1e-9)}
    assert usage["group"]["limit_usd"] == pytest.approx(spent - 0.000001)
    assert usage["reset_at"] == _next_month()


def test_paid_3_subscription_calls_are_not_metered_spend(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _bob, key = pool.member_key("bob")
    _call(pool, key, BODY, input_tokens=100_000, output_tokens=10_000)
    [record] = recorded(pool, 1)
    assert record["provider"] == "codex" and record["usage"]["cost_usd"] > 0
    assert _group(pool)["metered_spent_usd"] == 0.0


def test_paid_3_metered_spend_survives_a_restart(sim: Simulator, tmp_path: Path) -> None:
    settings = settings_for(sim, tmp_path / "data")
    account = sim.create_account("openai")
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        body = {"provider": "openai", "name": "key-1", "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        pool = Pool(gateway, sim, admin, key, [account], [1])
        pool.settle()
        _call(pool, key)
        [record] = recorded(pool, 1)
        admin.patch("/api/groups/1", json={"metered_monthly_usd": 0.000001})
    with running_gateway(settings) as again:  # a restarted gateway reads the month's spend back
        ledger = again.app.state["metered_spend"]
        assert ledger.group_spent(1) == pytest.approx(record["usage"]["cost_usd"], abs=1e-9)
        assert ledger.blocked(1, 1, "gpt-5") == ("metered_budget_exhausted", float(_next_month()))


@pytest.mark.xdist_group("postgres")
def test_paid_3_two_replicas_on_one_postgresql_count_every_cost_once() -> None:
    """Two engines (as two replicas) add to the same month rows at once on PostgreSQL: the atomic
    ``usd = usd + excluded.usd`` loses nothing, and each replica reads the other's spend."""
    with running_postgres() as server:
        url = server.migrated_database()
        engines = [create_db_engine(url) for _ in range(2)]
        try:
            _two_writers(engines)
        finally:
            for engine in engines:
                engine.dispose()


def _two_writers(engines: list[Engine]) -> None:
    with engines[0].begin() as connection:
        connection.execute(
            sa.text("INSERT INTO resource_groups (id, name, created_at, updated_at) VALUES (7, 'g7', 0, 0)")
        )
    clock = SystemClock()
    ledgers = [
        SpendLedger(
            engine, clock, PriceBook(engine, clock, GenaiPrices()), lambda provider: provider == "meter"
        )
        for engine in engines
    ]
    now, rounds, errors = clock.time(), 40, []

    def attempt(user: int) -> signals.RequestFinished:
        return signals.RequestFinished(
            request_id="r", started_at=now, duration_ms=1, first_token_ms=None, user_id=user, key_id=None,
            group_id=7, account_id=1, provider="meter", model="m", protocol="responses", operation="json",
            outcome=Outcome.SUCCESS, input_tokens=1, output_tokens=1,
        )  # fmt: skip

    def writer(index: int) -> None:
        try:
            for _ in range(rounds):
                with engines[index].begin() as connection:  # what the history writer does per batch
                    ledgers[index].add(connection, [attempt(2), attempt(3)], [0.01, 0.02])
                ledgers[index].committed()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for ledger in ledgers:
        ledger.refresh()
        assert ledger.group_spent(7) == pytest.approx(2 * rounds * 0.03, abs=1e-9)
        assert ledger.member_spent(3) == pytest.approx(2 * rounds * 0.02, abs=1e-9)
    with engines[1].connect() as connection:
        calls = connection.execute(sa.text("SELECT SUM(calls) FROM metered_spend")).scalar_one()
    assert calls == 4 * rounds


@pytest.mark.xdist_group("postgres")
@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")
def test_paid_3_two_sublane_replicas_sum_every_metered_call_exactly(sim: Simulator, tmp_path: Path) -> None:
    """Two ``sublane serve`` processes on one PostgreSQL and Redis serve a metered account's calls at
    once; each replica's group view shows the sum of every record's cost, as stored once per call."""
    with (
        running_postgres() as postgres,
        running_redis() as redis,
        cluster(tmp_path, postgres.new_database(), redis.url, sim) as nodes,
    ):
        a, b = nodes.start(2)
        admin = a.admin()
        account = sim.create_account("openai")
        body = {"provider": "openai", "name": "key-1", "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        clients = [a.client(key), b.client(key)]
        time.sleep(1.0)  # the account reached both replicas (SCALE-2: within 1 s)

        def call(index: int) -> int:
            return clients[index % 2].post("/v1/responses", json=METERED_BODY).status_code

        with ThreadPoolExecutor(6) as pool:
            assert list(pool.map(call, range(12))) == [200] * 12
        deadline = time.monotonic() + 10
        while True:  # each replica's history writer stores its records just after the answers
            with nodes.database() as connection:
                records = connection.execute(
                    sa.text("SELECT COUNT(*), SUM(cost_usd) FROM request_records WHERE provider = 'openai'")
                ).one()
                stored = connection.execute(sa.text("SELECT SUM(calls), SUM(usd) FROM metered_spend")).one()
            if records[0] == 12 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert records[0] == 12 and records[1] > 0
        assert stored[0] == 12 and float(stored[1]) == pytest.approx(float(records[1]), abs=1e-9)
        admin_b = b.admin()
        for viewer in (admin, admin_b):
            [group] = [g for g in viewer.get("/api/groups").json()["items"] if g["id"] == 1]
            assert group["metered_spent_usd"] == pytest.approx(float(records[1]), abs=1e-9)
        for client in [*clients, admin, admin_b]:
            client.close()


def test_paid_3_metered_spend_is_counted_with_records_and_summaries_off(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="openai", history_enabled=False, usage_enabled=False)
    _bob, key = pool.member_key("bob")
    _call(pool, key)
    assert [finished.provider for finished in pool.finished] == ["openai"]
    ledger = pool.gateway.app.state["metered_spend"]
    deadline = time.monotonic() + 10
    while ledger.group_spent(1) == 0.0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ledger.group_spent(1) > 0
    assert pool.admin.get("/api/requests").json()["items"] == []  # no record was written
    history = pool.gateway.app.state["history"]
    assert history.dropped == 0 and history.backlog == 0


@pytest.mark.xdist_group("postgres")
@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server")
def test_paid_3_a_cap_and_spend_on_one_replica_block_on_the_other_within_1_s(
    sim: Simulator, tmp_path: Path
) -> None:
    """Two gateways on one PostgreSQL and Redis: a cap set through A, and the spend of a call A
    served, reach B's ``blocked()`` answer (memory only) within a second."""
    with running_postgres() as postgres, running_redis() as redis:
        shared = {
            "database_url": postgres.migrated_database(),
            "redis_url": redis.url,
            "redis_namespace": "paid-3",
            "credentials_key": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        }
        with (
            running_gateway(settings_for(sim, tmp_path / "a", **shared)) as a,
            running_gateway(settings_for(sim, tmp_path / "b", **shared)) as b,
        ):
            admin = a.admin()
            account = sim.create_account("openai")
            body = {
                "provider": "openai",
                "name": "key-1",
                "credentials": account.credentials,
                "group_ids": [1],
            }
            assert admin.post("/api/accounts/import", json=body).status_code == 201
            key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
            bob = a.add_member(admin, "bob")
            on_b = b.app.state["metered_spend"]
            assert admin.patch(f"/api/users/{bob['id']}/limits", json={"metered_monthly_usd": 0}).is_success
            started = time.monotonic()
            while on_b.blocked(1, bob["id"], "gpt-5") is None:
                assert time.monotonic() - started < 1.0, "the member's limit did not reach B in 1 s"
                time.sleep(0.02)
            assert on_b.blocked(1, 1, "gpt-5") is None  # the admin has no limit, the group no cap
            assert admin.patch("/api/groups/1", json={"metered_monthly_usd": 0.0000001}).is_success
            time.sleep(1.0)
            assert on_b.blocked(1, 1, "gpt-5") is None  # nothing spent yet
            with httpx.Client(base_url=a.url, headers={"authorization": f"Bearer {key}"}) as client:
                assert client.post("/v1/responses", json=METERED_BODY).status_code == 200
            started = time.monotonic()
            while on_b.blocked(1, 1, "gpt-5") is None:  # A's spend, read by B
                assert time.monotonic() - started < 1.5, "A's spend did not reach B in time"
                time.sleep(0.02)
            assert on_b.blocked(1, 1, "gpt-5") == ("metered_budget_exhausted", float(_next_month()))
            admin.close()


def test_paid_3_a_client_over_its_cap_gets_429_with_the_reset_and_an_unpriced_model_400(
    make_pool: Callable[..., Pool],
) -> None:
    """The refusals as clients see them, wired through selection (PAID-2's hook): a member at their
    metered cap gets 429 ``metered_budget_exhausted`` with the reset when nothing else serves; a
    metered model without a price gets 400 ``unpriced_model`` until an admin prices it."""
    pool = make_pool(provider="openai", failover_attempts=0)
    bob, key = pool.member_key("bob")
    assert (
        pool.admin.patch(f"/api/users/{bob['id']}/limits", json={"metered_monthly_usd": 0}).status_code == 200
    )
    refused = pool.client(key).post("/v1/responses", json=METERED_BODY)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "metered_budget_exhausted"
    assert refused.headers["x-metered-budget-reset"] == str(_next_month())
    assert 1 <= int(refused.headers["retry-after"]) <= 86_400
    messages = pool.client(key).post(  # the same refusal in another client's protocol shape
        "/v1/messages",
        json={"model": "gpt-5", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert messages.status_code == 429 and messages.json()["type"] == "error"
    assert pool.sim.requests(endpoint="openai.responses") == []  # nothing reached the metered key
    pool.admin.patch(f"/api/users/{bob['id']}/limits", json={"metered_monthly_usd": None})
    _call(pool, key)  # served again once the cap is lifted
    # an OpenAI-compatible server's model that no price list knows
    compat = pool.sim.create_account("compat")
    imported = pool.admin.post(
        "/api/accounts/import",
        json={
            "provider": "openai-compatible",
            "name": "local",
            "credentials": {
                "api_key": compat.api_key,
                "base_url": pool.sim.compat_base_url,
                "models": ["qwen3-coder-30b"],
            },
            "group_ids": [1],
        },
    )
    assert imported.status_code == 201, imported.text
    pool.settle()
    chat = {"model": "qwen3-coder-30b", "messages": [{"role": "user", "content": "hi"}]}
    unpriced = pool.client(key).post("/v1/chat/completions", json=chat)
    assert unpriced.status_code == 400, unpriced.text
    assert unpriced.json()["error"]["code"] == "unpriced_model"
    priced = pool.admin.put("/api/prices/qwen3-coder-30b", json={"input": 0.2, "output": 0.8})
    assert priced.status_code == 200, priced.text
    deadline = time.monotonic() + 5
    while (served := pool.client(key).post("/v1/chat/completions", json=chat)).status_code != 200:
        assert time.monotonic() < deadline, served.text  # the price reaches selection's answers
        time.sleep(0.1)
