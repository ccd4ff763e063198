"""OPS-2 and STORE-4 end to end: a database held locked never costs a request, a record or a token.

Reproduces the probe of issue #16: with the database locked for seconds, a model call answered 200
whose record never appeared, a 401 answered 500 (storing the rejection failed), and the tokens a
refresh had just rotated were thrown away when storing them failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from gateway_pool import Pool
from sqlmodel import Session

from sublane_core import Account
from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}
DAY_S = 24 * 3600


@pytest.fixture(autouse=True)
def _quick_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # The lock below outlasts the gateway's busy timeout many times over, without a slow test.
    monkeypatch.setattr("sublane_core._db.SQLITE_BUSY_TIMEOUT_MS", 150)


@contextmanager
def _locked(pool: Pool) -> Iterator[None]:
    """Another process holds the database's write lock for the block."""
    holder = sa.create_engine(f"sqlite:///{pool.gateway.settings.data_dir / 'sublane.db'}")
    connection = holder.connect()
    connection.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        connection.exec_driver_sql("ROLLBACK")
        connection.close()
        holder.dispose()


def _stored_bundle(pool: Pool) -> dict[str, Any]:
    with Session(pool.gateway.engine) as db:
        row = db.get(Account, pool.account_ids[0])
        assert row is not None
        bundle: dict[str, Any] = pool.gateway.app.state.gateway.cipher.decrypt(row.credentials)
        return bundle


def _records(pool: Pool) -> int:
    assert pool.gateway.app.state.history.flush(10)
    with pool.gateway.engine.connect() as connection:
        return int(connection.execute(sa.text("SELECT count(*) FROM request_records")).scalar_one())


def test_ops_2_a_locked_database_costs_no_record_and_no_rotated_token(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(account_options={"access_ttl_s": 100})  # due for refresh at once
    account = pool.sim_accounts[0]
    pool.sim.update_account(account.id, access_ttl_s=DAY_S)
    with _locked(pool):
        answered = pool.client().post("/v1/responses", json=BODY)
        assert answered.status_code == 200, answered.text
        time.sleep(0.5)  # the writer tries, fails and keeps the record
        fresh = pool.sim.account(account.id)
        assert pool.sim.counters(account.id).refreshes == 1
    # The lock is gone: the record lands, and the rotated tokens were kept and are stored now.
    assert _records(pool) == 1
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert _stored_bundle(pool)["refresh_token"] == fresh.refresh_token
    assert pool.sim.counters(account.id).refreshes == 1  # no second refresh with a dead token
    assert _records(pool) == 2


def test_ops_2_a_401_while_the_database_is_locked_is_no_500(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0]
    pool.sim.script(account.id, Behaviour.error(401))
    with _locked(pool):
        answered = pool.client().post("/v1/responses", json=BODY)
        assert answered.status_code == 200, answered.text  # refreshed once, then served
    assert _records(pool) == 1
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200  # the next use stores it
    assert _stored_bundle(pool)["refresh_token"] == pool.sim.account(account.id).refresh_token
    assert pool.sim.counters(account.id).refreshes == 1
