"""COST-4 across replicas: a conversation's previous turn (its prefix digest, account and time),
stored where it was served, is known to every replica — real ``sublane serve`` processes sharing a
real PostgreSQL and a real Redis (see ``replicas.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from postgres_server import PostgresServer, postgres_bin, running_postgres
from redis_server import REDIS_SERVER, RedisServer, running_redis
from replicas import Cluster, cluster

from sublane_sim import Simulator

pytestmark = [
    pytest.mark.xdist_group("scale-out"),  # one PostgreSQL server, on one worker
    pytest.mark.skipif(
        REDIS_SERVER is None or postgres_bin() is None, reason="needs redis-server and PostgreSQL"
    ),
]

SESSION = {"x-claude-code-session-id": "shared-session"}


@pytest.fixture
def nodes(sim: Simulator, tmp_path: Path) -> Iterator[Cluster]:
    with running_postgres() as postgres, running_redis() as redis:
        assert isinstance(postgres, PostgresServer) and isinstance(redis, RedisServer)
        with cluster(tmp_path, postgres.new_database(), redis.url, sim) as made:
            yield made


def _turn(client: httpx.Client, admin: httpx.Client, *texts: str) -> dict[str, Any]:
    roles = ("user", "assistant")
    messages = [{"role": roles[index % 2], "content": text} for index, text in enumerate(texts)]
    body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": messages, "stream": True}
    response = client.post("/v1/messages", json=body, headers=SESSION)
    assert response.status_code == 200, response.text
    request_id = response.headers["x-request-id"]
    deadline = time.monotonic() + 5
    while (record := admin.get(f"/api/requests/{request_id}")).status_code == 404:
        assert time.monotonic() < deadline, "the record was not written"
        time.sleep(0.05)
    found: dict[str, Any] = record.json()
    return found


def test_cost_4_digest_shared_across_replicas(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    account = sim.create_account("claude")
    body = {"provider": "claude", "name": "c", "credentials": account.credentials, "group_ids": [1]}
    assert admin.post("/api/accounts/import", json=body).status_code == 201
    key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    time.sleep(1)
    with a.client(key) as on_a, b.client(key) as on_b:
        first = _turn(on_a, admin, "hello")
        assert first["cache"]["miss_reason"] == "first_turn"
        time.sleep(0.5)  # the turn is published (batched for up to 50 ms)
        # B never served this conversation: it knows the previous turn only from A
        edited = _turn(on_b, admin, "HELLO (edited)", "hi", "more")
        assert edited["cache"] == {"hit_rate": 0.0, "miss_reason": "prefix_changed"}
        time.sleep(0.5)
        kept = _turn(on_a, admin, "HELLO (edited)", "hi", "more", "ok", "go")  # extends B's turn
        assert kept["cache"]["miss_reason"] is None and kept["cache"]["hit_rate"] > 0.5
    admin.close()
