"""SCALE-2…5, SCALE-7: real gateway processes sharing a real PostgreSQL and a real Redis.

Every replica is a ``sublane serve`` process of its own (see ``replicas.py``); the upstream is the
simulator, which counts the model requests each account serves at once (``peak_streams``).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_server import PostgresServer, postgres_bin, running_postgres
from redis_server import REDIS_SERVER, RedisServer, running_redis
from replicas import Cluster, Replica, cluster

from sublane_sim import Behaviour, Simulator

pytestmark = [
    pytest.mark.xdist_group("scale-out"),  # one PostgreSQL server for these tests, on one worker
    pytest.mark.skipif(
        REDIS_SERVER is None or postgres_bin() is None, reason="needs redis-server and PostgreSQL"
    ),
]

BODY = {"model": "gpt-5-codex", "input": "hi"}


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server


@pytest.fixture
def nodes(postgres: PostgresServer, redis: RedisServer, sim: Simulator, tmp_path: Path) -> Iterator[Cluster]:
    with cluster(tmp_path, postgres.new_database(), redis.url, sim) as made:
        yield made


def _import_account(
    admin: httpx.Client, sim: Simulator, name: str, limit: int | None = None
) -> tuple[int, str]:
    account = sim.create_account("codex")
    body = {"provider": "codex", "name": name, "credentials": account.credentials, "group_ids": [1]}
    answer = admin.post("/api/accounts/import", json=body)
    assert answer.status_code == 201, answer.text
    account_id: int = answer.json()["id"]
    if limit is not None:
        assert admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": limit}).is_success
    return account_id, account.id


def _admin_key(admin: httpx.Client) -> str:
    secret: str = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    return secret


def _until(check: Any, timeout_s: float = 5.0, step_s: float = 0.05) -> float:
    """Seconds until ``check()`` holds (fails after ``timeout_s``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout_s, "did not happen in time"
        time.sleep(step_s)
    return time.monotonic() - start


def test_scale_2_max_concurrency_holds_across_two_replicas(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _, sim_id = _import_account(admin, sim, "shared", 2)
    key = _admin_key(admin)
    sim.set_default(sim_id, Behaviour.ok(header_delay_ms=400))
    time.sleep(1)  # the limit reached both replicas (≤ 1 s)
    clients = [a.client(key), b.client(key)]

    def call(index: int) -> int:
        return clients[index % 2].post("/v1/responses", json=BODY).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(call, range(8)))
    assert codes == [200] * 8  # the others waited for a slot (WAIT), on either replica
    assert sim.counters(sim_id).peak_streams == 2  # never 3: the limit holds over both replicas
    for client in [*clients, admin]:
        client.close()


def test_scale_2_waiters_are_served_first_come_first_served_across_replicas(
    nodes: Cluster, sim: Simulator
) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _, sim_id = _import_account(admin, sim, "one-slot", 1)
    key = _admin_key(admin)
    sim.set_default(sim_id, Behaviour.ok(header_delay_ms=1200))
    time.sleep(1)
    finished: list[str] = []
    lock = threading.Lock()

    def call(replica: Replica, name: str) -> None:
        with replica.client(key) as client:
            assert client.post("/v1/responses", json={**BODY, "input": name}).status_code == 200
        with lock:
            finished.append(name)

    threads = []
    for replica, name in ((a, "holder"), (b, "first"), (a, "second"), (b, "third")):
        thread = threading.Thread(target=call, args=(replica, name))
        thread.start()
        threads.append(thread)
        time.sleep(0.15)  # arrivals in this order, alternating replicas
    admin_b = b.admin()
    (state,) = admin_b.get("/api/accounts/runtime").json()["accounts"]
    admin_b.close()
    assert (state["in_flight"], state["waiters"]) == (1, 3)  # B's view counts A's calls too
    for thread in threads:
        thread.join(30)
    assert finished == ["holder", "first", "second", "third"]
    assert sim.counters(sim_id).peak_streams == 1
    admin.close()


def test_scale_2_member_concurrency_and_rpm_hold_across_replicas(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _, sim_id = _import_account(admin, sim, "roomy", 10)
    user = admin.post(
        "/api/users",
        json={
            "username": "mia",
            "password": "mia-pass-123",
            "role": "member",
            "member_concurrency": 1,
            "rpm": 3,
        },
    )
    assert user.status_code == 201, user.text
    issued = admin.post(f"/api/users/{user.json()['id']}/keys", json={"name": "k", "group_id": 1})
    assert issued.status_code == 201, issued.text
    key = issued.json()["secret"]
    sim.set_default(sim_id, Behaviour.ok(header_delay_ms=800))
    time.sleep(1)
    with a.client(key) as on_a, b.client(key) as on_b:
        holder = threading.Thread(target=lambda: on_a.post("/v1/responses", json=BODY))
        holder.start()
        time.sleep(0.3)
        busy = on_b.post("/v1/responses", json=BODY)
        assert busy.status_code == 429 and busy.json()["error"]["code"] == "member_busy"  # held on A
        holder.join(30)
        sim.set_default(sim_id, Behaviour.ok())
        # 3 calls a UTC minute over both replicas: the one held on A counted (the refused one not).
        minute = int(time.time() // 60)
        codes = [client.post("/v1/responses", json=BODY) for client in (on_b, on_a, on_b)]
        if int(time.time() // 60) == minute:  # the window did not turn meanwhile
            assert [answer.status_code for answer in codes] == [200, 200, 429]
            assert codes[2].json()["error"]["code"] == "member_rate_limited"
    admin.close()


def test_scale_2_a_change_on_one_replica_reaches_the_other_within_1_s(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    account_id, sim_id = _import_account(admin, sim, "changing", 1)
    key = _admin_key(admin)
    with b.client(key) as on_b:
        seconds = _until(lambda: on_b.post("/v1/responses", json=BODY).status_code == 200, 1.0)
        assert seconds < 1.0  # a key made on A works on B
        # A limit raised on A lets B serve two at once.
        assert admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 2}).is_success
        time.sleep(1.0)
        sim.set_default(sim_id, Behaviour.ok(header_delay_ms=500))
        with ThreadPoolExecutor(2) as pool:
            codes = list(pool.map(lambda _: on_b.post("/v1/responses", json=BODY).status_code, range(2)))
        assert codes == [200, 200] and sim.counters(sim_id).peak_streams == 2
        sim.set_default(sim_id, Behaviour.ok())
        # A key revoked on A stops working on B.
        key_id = next(item["id"] for item in admin.get("/api/keys").json()["items"])
        assert admin.delete(f"/api/keys/{key_id}").is_success
        seconds = _until(lambda: on_b.post("/v1/responses", json=BODY).status_code == 401, 1.0)
        assert seconds < 1.0
    admin.close()


def test_scale_2_cooldowns_and_clear_cooldown_hold_on_every_replica(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    account_id, sim_id = _import_account(admin, sim, "cooling", 2)
    key = _admin_key(admin)
    time.sleep(1)
    sim.script(sim_id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="600"))
    with a.client(key) as on_a, b.client(key) as on_b:
        assert on_a.post("/v1/responses", json=BODY).status_code == 429  # the account cools (COOL-1)
        served = sim.counters(sim_id).model_requests
        _until(
            lambda: on_b.post("/v1/responses", json=BODY).json()["error"]["code"] == "account_cooling", 1.0
        )
        assert sim.counters(sim_id).model_requests == served  # B never sent it upstream
        admin_b = b.admin()
        runtime = {item["id"]: item for item in admin_b.get("/api/accounts/runtime").json()["accounts"]}
        admin_b.close()
        assert runtime[account_id]["state"] == "cooling"
        assert admin.post(f"/api/accounts/{account_id}/resume").is_success  # Clear cooldown on A
        seconds = _until(lambda: on_b.post("/v1/responses", json=BODY).status_code == 200, 1.0)
        assert seconds < 1.0
    admin.close()


def test_scale_3_a_killed_replica_leaks_no_slot(
    postgres: PostgresServer, redis: RedisServer, sim: Simulator, tmp_path: Path
) -> None:
    with cluster(tmp_path, postgres.new_database(), redis.url, sim, SUBLANE_LEASE_TTL="2") as nodes:
        a, b = nodes.start(2)
        admin = a.admin()
        _, sim_id = _import_account(admin, sim, "one-slot", 1)
        key = _admin_key(admin)
        time.sleep(1)
        sim.set_default(sim_id, Behaviour.ok(header_delay_ms=60_000))  # a call that never ends

        def hold() -> None:
            with a.client(key, timeout=5) as client, contextlib.suppress(httpx.TransportError):
                client.post("/v1/responses", json=BODY)  # cut off by the kill

        holder = threading.Thread(target=hold)
        holder.start()
        _until(lambda: sim.counters(sim_id).current_streams == 1)
        a.kill()  # SIGKILL: its lease is never given back
        holder.join(10)
        sim.set_default(sim_id, Behaviour.ok())
        started = time.monotonic()
        with b.client(key) as on_b:
            answer = on_b.post("/v1/responses", json=BODY)  # waits for the dead replica's slot
        waited = time.monotonic() - started
        assert answer.status_code == 200, answer.text
        assert waited < 2 + 1.5  # the lease expired after SUBLANE_LEASE_TTL (renewed until the kill)
        admin.close()


def test_scale_4_an_unreachable_redis_is_503_until_it_is_back(
    nodes: Cluster, redis: RedisServer, sim: Simulator
) -> None:
    (a,) = nodes.start(1)
    admin = a.admin()
    _, sim_id = _import_account(admin, sim, "steady", 2)
    key = _admin_key(admin)
    with a.client(key) as client:
        assert client.post("/v1/responses", json=BODY).status_code == 200
        sim.set_default(sim_id, Behaviour.ok(deltas=30, pacing_ms=50))
        with client.stream("POST", "/v1/responses", json={**BODY, "stream": True}) as running:
            lines = running.iter_lines()
            next(line for line in lines if "output_text.delta" in line)
            redis.stop()
            refused = client.post("/v1/responses", json=BODY)
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "coordination_unavailable"
            assert int(refused.headers["retry-after"]) >= 1
            rest = "".join(lines)
            assert "response.completed" in rest  # the running stream finished
        assert httpx.get(f"{a.url}/readyz").status_code == 503
        assert httpx.get(f"{a.url}/readyz").json()["checks"]["coordination"] == "unreachable"
        sim.set_default(sim_id, Behaviour.ok())
        redis.start()  # the same port
        _until(lambda: client.post("/v1/responses", json=BODY).status_code == 200, 10)
        assert httpx.get(f"{a.url}/readyz").status_code == 200
    admin.close()


def test_scale_5_records_of_every_replica_are_in_one_history_with_unique_increasing_ids(
    nodes: Cluster, sim: Simulator
) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _import_account(admin, sim, "recorded", 4)
    key = _admin_key(admin)
    time.sleep(1)

    def recorded() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = admin.get("/api/requests").json()["items"]
        return items

    ids = []
    for index in range(6):  # one call at a time, alternating replicas, each recorded before the next
        with (a if index % 2 else b).client(key) as client:
            answer = client.post("/v1/responses", json=BODY)
            assert answer.status_code == 200
        request_id = answer.headers["x-request-id"]
        _until(lambda rid=request_id: any(item["request_id"] == rid for item in recorded()))  # on A's view
        ids.append(next(item["id"] for item in recorded() if item["request_id"] == request_id))
    assert ids == sorted(ids) and len(set(ids)) == 6  # unique, and later calls have larger ids
    admin.close()


def test_scale_2_one_refresh_per_account_across_replicas_never_reuses_a_refresh_token(
    nodes: Cluster, sim: Simulator
) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    account_id, sim_id = _import_account(admin, sim, "rotating", 8)
    key = _admin_key(admin)
    clients = [a.client(key), b.client(key)]
    for client in clients:  # both replicas hold the credentials in memory
        _until(lambda client=client: client.post("/v1/responses", json=BODY).status_code == 200, 2.0)
    refreshes = sim.counters(sim_id).refreshes
    sim.expire_access_tokens(sim_id)  # every call is refused with 401 until a refresh

    def call(index: int) -> httpx.Response:
        return clients[index % 2].post("/v1/responses", json=BODY)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(call, range(8)))
    assert [answer.status_code for answer in answers] == [200] * 8, [
        a.text for a in answers if a.status_code != 200
    ]
    assert sim.counters(sim_id).refreshes == refreshes + 1  # one refresh for both replicas
    accounts = {item["id"]: item for item in admin.get("/api/accounts").json()["items"]}
    assert accounts[account_id]["auth_state"] == "ok"  # the rotated refresh token was never used twice
    for client in [*clients, admin]:
        client.close()


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def test_scale_7_workers_serve_one_port_with_limits_shared(nodes: Cluster, sim: Simulator) -> None:
    (server,) = nodes.start(1, SUBLANE_WORKERS="2")
    _until(lambda: server.log.read_text().count("Application startup complete") == 2, 30)
    workers = [
        pid
        for pid in _children(server.process.pid)
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(workers) == 2  # two processes behind the one port
    admin = server.admin()
    _, sim_id = _import_account(admin, sim, "shared", 2)
    key = _admin_key(admin)
    sim.set_default(sim_id, Behaviour.ok(header_delay_ms=300))
    time.sleep(1)

    def call(_: int) -> int:
        with server.client(key) as client:  # a connection each: the kernel spreads them over workers
            return client.post("/v1/responses", json=BODY).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(call, range(8)))
    assert codes == [200] * 8
    assert sim.counters(sim_id).peak_streams == 2
    admin.close()


def test_scale_2_quota_is_read_once_for_every_replica(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _, exhausted = _import_account(admin, sim, "exhausted", 4)
    _import_account(admin, sim, "other", 4)
    key = _admin_key(admin)
    sim.set_quota(exhausted, "primary", used_percent=100, reset_in_s=3600)
    time.sleep(1)
    with a.client(key) as on_a, b.client(key) as on_b:
        on_a.post("/v1/responses", json=BODY)  # the first call starts the reads (QUOTA-1)
        _until(lambda: sim.quota_reads(exhausted) == 1)
        time.sleep(0.5)  # the observation reached B as an event
        calls = sim.counters(exhausted).model_requests
        for _ in range(6):
            assert on_b.post("/v1/responses", json=BODY).status_code == 200
        assert sim.counters(exhausted).model_requests == calls  # B steers around it, knowing A's read
        assert sim.quota_reads(exhausted) == 1  # and never read it itself
    admin.close()


def test_scale_2_model_failures_are_counted_over_every_replica(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _, sim_id = _import_account(admin, sim, "failing", 4)
    key = _admin_key(admin)
    time.sleep(1)
    sim.set_default(sim_id, Behaviour.error(500))  # one logical failure per call (its retries in it)
    with a.client(key) as on_a, b.client(key) as on_b:
        for client in (on_a, on_b, on_a):  # MCOOL-2: the third failure in the window, over two replicas
            assert client.post("/v1/responses", json=BODY).status_code >= 500
            time.sleep(0.3)  # each failure reached the other replica
        sent = sim.counters(sim_id).model_requests
        refused = on_b.post("/v1/responses", json=BODY)
        assert refused.json()["error"]["code"] == "model_cooling", refused.text  # cooled for both
        assert sim.counters(sim_id).model_requests == sent
    admin.close()


def test_scale_2_a_conversation_moved_on_one_replica_follows_on_the_other(
    nodes: Cluster, sim: Simulator
) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    ids = dict([_import_account(admin, sim, "x", 4), _import_account(admin, sim, "y", 4)])
    key = _admin_key(admin)
    time.sleep(1)
    conversation = {"session_id": "thread-1"}

    def served_by(client: httpx.Client) -> int:
        before = {account: sim.counters(sim_id).model_requests for account, sim_id in ids.items()}
        assert client.post("/v1/responses", json=BODY, headers=conversation).status_code == 200
        return next(
            account
            for account, sim_id in ids.items()
            if sim.counters(sim_id).model_requests > before[account]
        )

    with a.client(key) as on_a, b.client(key) as on_b:
        bound = served_by(on_a)
        assert served_by(on_b) == bound  # both replicas know (and cache) the binding
        assert admin.patch(f"/api/accounts/{bound}", json={"enabled": False}).is_success
        time.sleep(1)
        moved = served_by(on_b)  # OPS-5: released, bound anew on B
        assert moved != bound
        assert admin.patch(f"/api/accounts/{bound}", json={"enabled": True}).is_success
        time.sleep(1)
        assert served_by(on_a) == moved  # A follows B's new binding, not its cached one
    admin.close()


def test_scale_2_token_budgets_hold_over_every_replica(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _import_account(admin, sim, "counted", 4)
    user = admin.post("/api/users", json={"username": "ben", "password": "ben-pass-1234", "role": "member"})
    assert user.status_code == 201, user.text
    user_id = user.json()["id"]
    key = admin.post(f"/api/users/{user_id}/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    rules = {"rules": [{"period": "day", "limit": 1}]}  # set on A: B must learn it (TEAM-4)
    assert admin.put(f"/api/users/{user_id}/budgets", json=rules).status_code == 200
    time.sleep(1)
    with a.client(key) as on_a, b.client(key) as on_b:
        assert on_a.post("/v1/responses", json=BODY).status_code == 200  # under the limit when it began
        time.sleep(0.5)  # its tokens reached B
        refused = on_b.post("/v1/responses", json=BODY)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "token_budget_exceeded"
        assert admin.put(f"/api/users/{user_id}/budgets", json={"rules": []}).status_code == 200
        _until(lambda: on_b.post("/v1/responses", json=BODY).status_code == 200, 1.0)  # lifted on B too
    admin.close()


def test_cost_5_rolling_dollar_budgets_hold_over_every_replica(nodes: Cluster, sim: Simulator) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    _import_account(admin, sim, "priced", 4)
    user = admin.post("/api/users", json={"username": "cy", "password": "cy-pass-12345", "role": "member"})
    assert user.status_code == 201, user.text
    user_id = user.json()["id"]
    key = admin.post(f"/api/users/{user_id}/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    rules = {"rules": [{"period": "5h", "unit": "usd", "limit": 0.01}]}  # set on A: B must learn it
    assert admin.put(f"/api/users/{user_id}/budgets", json=rules).status_code == 200
    time.sleep(1)
    priced = {"model": "gpt-5-codex", "input": "say hi", "stream": False}
    with a.client(key) as on_a, b.client(key) as on_b:
        for account in sim.accounts():
            sim.script(account.id, Behaviour.ok(input_tokens=10_000, cached_tokens=4_000, output_tokens=500))
        assert on_a.post("/v1/responses", json=priced).status_code == 200  # $0.013, begun at $0
        time.sleep(0.5)  # its cost reached B
        refused = on_b.post("/v1/responses", json=priced)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "token_budget_exceeded"
        assert 5 * 3600 - 10 <= int(refused.headers["retry-after"]) <= 5 * 3600
    admin.close()


def test_scale_3_a_call_is_recorded_before_its_slot_goes_back(
    nodes: Cluster, sim: Simulator, redis: RedisServer
) -> None:
    import redis as redis_py

    (a,) = nodes.start(1)
    admin = a.admin()
    account_id, _ = _import_account(admin, sim, "recorded", 1)
    key = _admin_key(admin)
    time.sleep(1)
    leases = f"{{sublane}}:lease:{account_id}"
    with redis_py.Redis.from_url(redis.url) as probe, a.client(key) as on_a:
        for _ in range(5):
            answer = on_a.post("/v1/responses", json=BODY)
            assert answer.status_code == 200
            _until(lambda: probe.zcard(leases) == 0, 2.0, 0.001)  # the slot went back…
            with nodes.database() as connection:  # …so the record is in the database already
                rows = connection.execute(
                    sa.text("SELECT count(*) FROM request_records WHERE request_id = :id"),
                    {"id": answer.headers["x-request-id"]},
                ).scalar()
            assert rows == 1
    admin.close()


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    limit=st.integers(min_value=1, max_value=3),
    calls=st.lists(
        st.tuples(st.integers(min_value=0, max_value=1), st.sampled_from([0, 150, 400])),
        min_size=1,
        max_size=10,
    ),
)
def test_scale_2_random_bursts_over_two_gateway_processes_hold_the_limit_and_leak_nothing(
    two_replicas: tuple[Replica, Replica, httpx.Client, str],
    sim: Simulator,
    limit: int,
    calls: list[tuple[int, int]],
) -> None:
    """Hypothesis drives two real gateway processes sharing one Redis: bursts of calls at either
    replica on a fresh account with a random limit; every call is served (waiting when it must),
    the upstream never sees more than the limit at once, and afterwards no slot and no waiter is
    left on either replica."""
    a, b, admin, key = two_replicas
    account_id, sim_id = _import_account(admin, sim, f"burst-{uuid.uuid4().hex[:6]}", limit)
    time.sleep(1.0)  # the account and its limit reached both replicas
    sim.script(sim_id, *[Behaviour.ok(header_delay_ms=delay) for _, delay in calls])
    replicas = (a, b)

    def call(replica: int) -> int:
        with replicas[replica].client(key) as client:
            return client.post("/v1/responses", json=BODY).status_code

    with ThreadPoolExecutor(len(calls)) as pool:
        codes = list(pool.map(call, [replica for replica, _ in calls]))
    assert codes == [200] * len(calls)
    assert sim.counters(sim_id).peak_streams <= limit

    def settled() -> bool:
        accounts = admin.get("/api/accounts/runtime").json()["accounts"]
        state = next(item for item in accounts if item["id"] == account_id)
        return bool(state["in_flight"] == 0 and state["waiters"] == 0)

    _until(settled, 5.0)  # over both replicas: the view counts them from Redis
    assert admin.delete(f"/api/accounts/{account_id}").is_success


@pytest.fixture
def two_replicas(nodes: Cluster) -> Iterator[tuple[Replica, Replica, httpx.Client, str]]:
    a, b = nodes.start(2)
    admin = a.admin()
    key = _admin_key(admin)
    yield a, b, admin, key
    admin.close()
