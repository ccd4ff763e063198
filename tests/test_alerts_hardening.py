"""Alerts hardened (issue #46): ALERT-1's URLs and their secrets, deliveries that cannot be sent,
disabled webhooks, the refresh alert off the request's path, and ALERT-6 — one delivery per event
over two real replicas on PostgreSQL and Redis, with a slow receiver process."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from gateway_pool import Pool, settings_for
from ports import free_port
from postgres_server import PostgresServer, postgres_bin, running_postgres
from redis_server import REDIS_SERVER, running_redis
from replicas import Cluster, cluster
from webhook_receiver import received, receiver

from sublane_gateway.testing import running_gateway
from sublane_sim import Behaviour, RefreshOutcome, Simulator

UNUSABLE = [
    "http://a:b/",  # a port that is not a number
    "http://xn--zz.com/",  # an A-label IDNA refuses
    "http://☃.net:1/",  # a name IDNA cannot encode
    "http://hooks.example/a\x00b",
    "http://hooks.example/a\r\nX-Injected: 1",
    "http://[::1/",  # an unclosed bracket (a 500 before)
    "http://hooks.example:99999/",
    "http://hooks.example:0/",
    "http://hooks example/",
    "http://a..example/",
]
REFUSED_ADDRESSES = [
    "http://169.254.169.254/latest/meta-data/",  # a cloud's instance metadata
    "http://169.254.43518/",  # the same network in the resolver's older spelling
    "http://2852039166/",  # 169.254.169.254 as one number
    "http://[fe80::1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://0.0.0.0:8080/",
    "http://0/",
    "http://[::]/",
]


def _deliveries(admin: httpx.Client, hook: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = admin.get(f"/api/webhooks/{hook}/deliveries").json()["items"]
    return items


def _until(check: Callable[[], object], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "did not happen in time"
        time.sleep(0.05)


def test_alert_1_webhook_url_refused_when_unusable(make_pool: Callable[..., Pool]) -> None:
    admin = make_pool(accounts=0).admin
    for url in UNUSABLE + REFUSED_ADDRESSES:
        answer = admin.post("/api/webhooks", json={"url": url})
        assert answer.status_code == 400, (url, answer.status_code, answer.text)
        assert answer.json()["error"]["code"] == "invalid_url", url
    good = admin.post("/api/webhooks", json={"url": "https://hooks.example/alerts"})
    assert good.status_code == 201, good.text
    hook = good.json()["id"]
    for url in ("http://[::1/", "http://169.254.169.254/"):
        changed = admin.patch(f"/api/webhooks/{hook}", json={"url": url})
        assert changed.status_code == 400 and changed.json()["error"]["code"] == "invalid_url", url
    for url in (
        "http://127.0.0.1:8080/hook",
        "https://[::1]:8443/",
        "http://my_service:80/",
        "https://é.example/",
    ):
        assert admin.post("/api/webhooks", json={"url": url}).status_code == 201, url
    assert len(admin.get("/api/webhooks").json()["items"]) == 5  # nothing refused was stored


def test_alert_1_url_user_info_and_path_are_secrets_in_answers_logs_and_audit(
    make_pool: Callable[..., Pool], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool(accounts=0, alert_retry_s=0.2)
    admin = pool.admin
    port, log = free_port(), tmp_path / "received.jsonl"
    url = f"http://hookuser:hookpass42@127.0.0.1:{port}/services/T000/B000/pathtoken42?sig=querytoken42"
    secrets = ("hookpass42", "pathtoken42", "querytoken42", "hookuser")
    made = admin.post("/api/webhooks", json={"url": url, "events": ["*"]})
    assert made.status_code == 201, made.text
    hook, signing = made.json()["id"], made.json()["secret"]
    assert made.json()["url"] == f"http://***@127.0.0.1:{port}/***"
    listed = admin.get("/api/webhooks").json()["items"][0]
    assert listed["url"] == f"http://***@127.0.0.1:{port}/***" and "secret" not in listed
    changed = admin.patch(f"/api/webhooks/{hook}", json={"url": url.replace("pathtoken42", "pathtoken42b")})
    assert changed.status_code == 200 and changed.json()["url"] == f"http://***@127.0.0.1:{port}/***"
    admin.patch(f"/api/webhooks/{hook}", json={"url": url})
    kept = admin.patch(f"/api/webhooks/{hook}", json={"url": listed["url"]})  # the masked URL sent back
    assert kept.status_code == 200  # changes nothing: the deliveries below still reach the real URL
    with receiver(port, signing, log, fail=1):
        event_id = admin.post(f"/api/webhooks/{hook}/test").json()["event_id"]
        got = received(log, 2)
        _until(lambda: _deliveries(admin, hook)[0]["status"] == "delivered")
    assert [item["delivery"] for item in got] == [event_id, event_id] and got[1]["valid"]
    answers = json.dumps(
        [admin.get("/api/webhooks").json(), _deliveries(admin, hook), admin.get("/api/audit").json()]
    )
    logged = caplog.text + "".join(record.getMessage() for record in caplog.records)
    for secret in (*secrets, signing):
        assert secret not in answers, secret
        assert secret not in logged, secret
    with pool.gateway.engine.connect() as connection:
        audit = json.dumps([row[0] for row in connection.execute(sa.text("SELECT summary FROM audit_log"))])
    assert not any(secret in audit for secret in (*secrets, signing))
    assert "127.0.0.1" in audit  # the audit still says which webhook


def _unusable_hook(pool: Pool, url: str) -> int:
    """A webhook stored before URLs were checked: made with a good URL, then given ``url`` in the
    database, as an older SubLane would have kept it."""
    hook: int = pool.admin.post("/api/webhooks", json={"url": "http://127.0.0.1:9/x"}).json()["id"]
    with pool.gateway.engine.begin() as connection:
        connection.execute(sa.text("UPDATE webhooks SET url = :url WHERE id = :id"), {"url": url, "id": hook})
    return hook


def test_alert_1_a_delivery_that_cannot_be_sent_is_a_failed_attempt_never_a_hot_loop(
    make_pool: Callable[..., Pool], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's numbers: 30 deliveries to five unusable URLs (more than one batch of 20) used to
    stay pending with 0 attempts, retried at once for ever (a traceback each, 7.4 s of CPU in 9.3 s)
    while a healthy webhook's event was never sent. Each is now one failed attempt, backing off."""
    caplog.set_level(logging.INFO)
    pool = make_pool(accounts=0)  # the default first retry, 10 s: one attempt each in this test
    storable = [url for url in UNUSABLE if "\x00" not in url]  # PostgreSQL stores no NUL
    bad = [_unusable_hook(pool, url) for url in storable[:6]]
    for index in range(30):
        assert pool.admin.post(f"/api/webhooks/{bad[index % len(bad)]}/test").status_code == 202
    port, log = free_port(), tmp_path / "received.jsonl"
    healthy = pool.admin.post("/api/webhooks", json={"url": f"http://127.0.0.1:{port}/ok"}).json()
    with receiver(port, healthy["secret"], log):
        started = time.monotonic()
        event_id = pool.admin.post(f"/api/webhooks/{healthy['id']}/test").json()["event_id"]
        assert [item["delivery"] for item in received(log, 1, timeout_s=10)] == [event_id]
        assert time.monotonic() - started < 5  # not starved by the 30
    _until(lambda: all(item["attempts"] == 1 for hook in bad for item in _deliveries(pool.admin, hook)))
    lines_before, cpu_before, wall_before = len(caplog.records), time.process_time(), time.monotonic()
    time.sleep(3)
    cpu, wall = time.process_time() - cpu_before, time.monotonic() - wall_before
    items = [item for hook in bad for item in _deliveries(pool.admin, hook)]
    assert len(items) == 30
    assert all(item["status"] == "pending" and item["attempts"] == 1 for item in items)  # backing off
    assert {item["last_error"] for item in items} == {"invalid_url"}
    assert all(item["next_attempt_at"] for item in items)
    assert len(caplog.records) - lines_before < 10  # no line per retry: there are none yet
    assert cpu < 0.3 * wall, (cpu, wall)  # idle, not spinning


def test_alert_1_a_disabled_webhooks_pending_deliveries_wait_until_it_is_enabled(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool(accounts=0, alert_retry_s=0.3)
    admin = pool.admin
    port, log = free_port(), tmp_path / "received.jsonl"
    made = admin.post("/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook"}).json()
    hook = made["id"]
    first = admin.post(f"/api/webhooks/{hook}/test").json()["event_id"]  # nobody listens yet
    _until(lambda: _deliveries(admin, hook)[0]["attempts"] >= 1)
    assert admin.patch(f"/api/webhooks/{hook}", json={"enabled": False}).status_code == 200
    time.sleep(0.5)  # an attempt claimed before the change has ended
    attempts = _deliveries(admin, hook)[0]["attempts"]
    with receiver(port, made["secret"], log):
        time.sleep(2)  # several retry periods
        assert received(log, 1, timeout_s=0.1) == []  # disabled: not sent
        (item,) = _deliveries(admin, hook)
        assert item["status"] == "pending" and item["attempts"] == attempts
        assert admin.patch(f"/api/webhooks/{hook}", json={"enabled": True}).status_code == 200
        assert [entry["delivery"] for entry in received(log, 1)] == [first]  # it resumes
        _until(lambda: _deliveries(admin, hook)[0]["status"] == "delivered")
    second = admin.post(f"/api/webhooks/{hook}/test").json()["event_id"]  # nobody listens again
    _until(lambda: any(item["id"] == second and item["attempts"] >= 1 for item in _deliveries(admin, hook)))
    admin.patch(f"/api/webhooks/{hook}", json={"enabled": False})
    pool.gateway.clock.advance(25 * 3600)  # disabled past the event's 24 hours
    with receiver(port, made["secret"], log):
        admin.patch(f"/api/webhooks/{hook}", json={"enabled": True})
        _until(lambda: _deliveries(admin, hook)[0]["status"] == "failed")
        time.sleep(0.5)
        assert len(received(log, 2, timeout_s=0.1)) == 1  # the expired event was not sent
    latest = _deliveries(admin, hook)[0]
    assert latest["id"] == second and latest["last_error"] and latest["next_attempt_at"] is None


def _hold_the_outbox(engine: sa.Engine, seconds: float) -> threading.Thread:
    """Keep the outbox from being written for ``seconds``: a transaction that holds its table (on
    PostgreSQL) or SQLite's one write lock."""
    ready = threading.Event()

    def hold() -> None:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(sa.text("LOCK TABLE webhook_deliveries IN EXCLUSIVE MODE"))
            else:
                connection.execute(sa.text("UPDATE webhook_deliveries SET attempts = attempts"))
            ready.set()
            time.sleep(seconds)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert ready.wait(5)
    return holder


def test_alert_2_the_refresh_failing_alert_is_written_off_the_requests_path(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    """A request whose refresh failed the third time answers at once even while the outbox cannot
    be written; the alert is written when it can be (it used to hold the request until the write
    ended, or SQLite's 5 s busy timeout gave up on it and lost the alert)."""
    pool = make_pool(alert_retry_s=0.2, account_options={"access_ttl_s": 100})
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    port, log = free_port(), tmp_path / "received.jsonl"
    made = pool.admin.post(
        "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/a", "events": ["account.refresh_failing"]}
    ).json()
    pool.sim.script_refresh(account.id, *[RefreshOutcome(kind="error", status=500)] * 3)
    body = {"model": "gpt-5-codex", "input": "hi"}
    with receiver(port, made["secret"], log):
        for backoff in (30, 60):
            pool.client().post("/v1/responses", json=body)
            pool.gateway.clock.advance(backoff)
        holder = _hold_the_outbox(pool.gateway.engine, 2.0)
        started = time.monotonic()
        answer = pool.client().post("/v1/responses", json=body)
        took = time.monotonic() - started
        assert pool.sim.counters(account.id).refreshes == 3
        holder.join()
        got = received(log, 1)
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "account_refresh_failed"
    assert took < 1.0, took
    assert [item["event"] for item in got] == ["account.refresh_failing"]
    assert got[0]["body"]["data"] == {
        "account": {"id": account_id, "name": "codex-1"},
        "failures": 3,
        "reason": "http_500",
    }


def test_alert_6_a_delivery_claimed_by_a_deliverer_that_died_is_sent_when_its_claim_runs_out(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    """A claim is a lease on the row (``next_attempt_at`` moved a minute ahead), not a state: a
    replica that died after claiming, before writing a result, leaves a row that comes back."""
    pool = make_pool(accounts=0)
    port, log = free_port(), tmp_path / "received.jsonl"
    made = pool.admin.post("/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook"}).json()
    now = pool.gateway.clock.time()
    payload = json.dumps(
        {"id": "evt_dead", "event": "webhook.test", "at": now, "workspace": "SubLane", "data": {}}
    )
    with pool.gateway.engine.begin() as connection:  # as a replica left it when it was SIGKILLed
        connection.execute(
            sa.text(
                "INSERT INTO webhook_deliveries (webhook_id, event_id, event, payload, status, attempts,"
                " next_attempt_at, created_at) VALUES (:hook, 'evt_dead', 'webhook.test', :payload,"
                " 'pending', 0, :lease, :now)"
            ),
            {"hook": made["id"], "payload": payload, "lease": now + 60, "now": now},
        )
    with receiver(port, made["secret"], log):
        time.sleep(1.5)  # more than a poll: still someone else's
        assert received(log, 1, timeout_s=0.1) == []
        pool.gateway.clock.advance(61)
        got = received(log, 1, timeout_s=5)
        _until(lambda: _deliveries(pool.admin, made["id"])[0]["status"] == "delivered")
    assert [item["delivery"] for item in got] == ["evt_dead"] and got[0]["valid"]


def test_alert_6_a_delivery_being_sent_at_shutdown_is_given_back_to_the_next_start(
    sim: Simulator, tmp_path: Path
) -> None:
    settings = settings_for(sim, tmp_path / "data")
    port, log = free_port(), tmp_path / "received.jsonl"
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        made = admin.post("/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook"}).json()
    # the receiver outlives the gateway: its delivery is still being sent when the gateway stops
    with receiver(port, made["secret"], log, silent=1), running_gateway(settings) as gateway:
        event_id = gateway.admin().post(f"/api/webhooks/{made['id']}/test").json()["event_id"]
        assert len(received(log, 1)) == 1  # being sent: the receiver holds it
    with receiver(port, made["secret"], log), running_gateway(settings) as gateway:
        started = time.monotonic()
        got = received(log, 2, timeout_s=10)
        took = time.monotonic() - started
        _until(lambda: _deliveries(gateway.admin(), made["id"])[0]["status"] == "delivered")
    assert [item["delivery"] for item in got] == [event_id, event_id]
    assert took < 5, took  # at once, not when the one-minute claim ran out


# -- ALERT-6: two replicas -------------------------------------------------------------------------

replicas_needed = pytest.mark.skipif(
    REDIS_SERVER is None or postgres_bin() is None, reason="needs redis-server and PostgreSQL"
)


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    if postgres_bin() is None:
        pytest.skip("needs PostgreSQL")
    with running_postgres() as server:
        yield server


@pytest.fixture
def nodes(postgres: PostgresServer, sim: Simulator, tmp_path: Path) -> Iterator[Cluster]:
    if REDIS_SERVER is None:
        pytest.skip("needs redis-server")
    with running_redis() as redis, cluster(tmp_path, postgres.new_database(), redis.url, sim) as made:
        yield made


def _counted(log: Path, at_least: int, settle_s: float) -> Counter[str]:
    """Each delivery id the receiver got and how often, once it has ``at_least`` requests and
    nothing more came for ``settle_s``."""
    got = received(log, at_least, timeout_s=60)
    while True:
        time.sleep(settle_s)
        again = received(log, 0)
        if len(again) == len(got):
            return Counter(str(item["delivery"]) for item in got)
        got = again


@replicas_needed
@pytest.mark.xdist_group("scale-out")
def test_alert_6_each_event_is_delivered_once_over_two_replicas_with_a_slow_receiver(
    nodes: Cluster, tmp_path: Path
) -> None:
    a, b = nodes.start(2)
    admin_a, admin_b = a.admin(), b.admin()
    port, log = free_port(), tmp_path / "received.jsonl"
    made = admin_a.post("/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook"}).json()
    with receiver(port, made["secret"], log, delay_s=2.5):
        queued = [
            (admin_a if index % 2 else admin_b).post(f"/api/webhooks/{made['id']}/test").json()["event_id"]
            for index in range(8)
        ]
        counts = _counted(log, len(queued), settle_s=4.0)  # past both replicas' polls and a send
    assert counts == dict.fromkeys(queued, 1), counts
    items = admin_b.get(f"/api/webhooks/{made['id']}/deliveries").json()["items"]
    assert {item["status"] for item in items} == {"delivered"} and {item["attempts"] for item in items} == {1}
    admin_a.close()
    admin_b.close()


@replicas_needed
@pytest.mark.xdist_group("scale-out")
def test_alert_6_pool_unavailable_is_told_once_per_group_and_model_over_two_replicas(
    nodes: Cluster, sim: Simulator, tmp_path: Path
) -> None:
    a, b = nodes.start(2)
    admin = a.admin()
    account = sim.create_account("codex")
    imported = admin.post(
        "/api/accounts/import",
        json={"provider": "codex", "name": "only", "credentials": account.credentials, "group_ids": [1]},
    )
    assert imported.status_code == 201, imported.text
    key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    port, log = free_port(), tmp_path / "received.jsonl"
    made = admin.post(
        "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook", "events": ["pool.unavailable"]}
    )
    time.sleep(1.5)  # the webhook and the account reached both replicas
    sim.script(account.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="600"))
    body = {"model": "gpt-5-codex", "input": "hi"}
    with receiver(port, made.json()["secret"], log), a.client(key) as on_a, b.client(key) as on_b:
        assert on_a.post("/v1/responses", json=body).status_code == 429  # the account cools
        _until(lambda: on_b.post("/v1/responses", json=body).json()["error"]["code"] == "account_cooling", 5)
        for _ in range(3):  # both replicas refuse, and each asks to tell it
            for client in (on_a, on_b):
                refused = client.post("/v1/responses", json=body)
                assert refused.json()["error"]["code"] == "account_cooling"
            time.sleep(0.3)
        counts = _counted(log, 1, settle_s=3.0)
    with nodes.database() as connection:
        marks = connection.execute(sa.text("SELECT key FROM alert_marks")).scalars().all()
    assert sum(counts.values()) == 1, ([item["body"]["data"] for item in received(log, 0)], marks)
    assert marks == ["pool.unavailable:1:gpt-5-codex"]
    admin.close()
