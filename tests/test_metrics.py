"""``/healthz``, ``/readyz`` and ``/metrics`` (OPS-8) after real traffic through the simulator.

The metrics are scraped as Prometheus does (a bearer token, the text format) and parsed with
``prometheus_client``'s own parser; the values must match the calls the test made and what the
gateway recorded about them in its history.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import sqlalchemy as sa
from gateway_pool import Pool, recorded
from prometheus_client.parser import text_string_to_metric_families

from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True, "store": False}
TOKEN = "metrics-token-for-tests"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(pool: Pool, token: str = TOKEN) -> Samples:
    answer = pool.gateway.client().get("/metrics", headers={"authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def secrets_in(value: Any) -> list[str]:
    """The longer strings of a credential file (tokens, ids), wherever they are nested."""
    if isinstance(value, dict):
        return [item for nested in value.values() for item in secrets_in(nested)]
    return [value] if isinstance(value, str) and len(value) >= 12 else []


def test_ops_8_health_and_readiness_need_no_credentials_and_no_upstream(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    anonymous = pool.gateway.client()
    before = len(pool.sim.requests())
    health = anonymous.get("/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    ready = anonymous.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "ready" and set(ready.json()["checks"].values()) == {"ok"}
    assert len(pool.sim.requests()) == before  # neither touched an upstream
    # A database left behind the code's schema is not ready (and says why); health is unaffected.
    engine = pool.gateway.engine
    with engine.begin() as connection:
        head = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar_one()
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    try:
        behind = anonymous.get("/readyz")
        assert behind.status_code == 503
        assert behind.json()["status"] == "not_ready" and "0001" in behind.json()["checks"]["schema"]
        assert anonymous.get("/healthz").status_code == 200
    finally:
        with engine.begin() as connection:
            connection.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": head})
    assert anonymous.get("/readyz").status_code == 200


def test_ops_8_metrics_after_real_traffic_match_the_requests_made(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2, metrics_token=TOKEN)
    client = pool.client()
    for _ in range(3):
        assert client.post("/v1/responses", json=BODY).status_code == 200
    for _ in range(2):
        assert client.post("/v1/responses", json=dict(BODY, stream=False)).status_code == 200
    chat = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}]}
    assert client.post("/v1/chat/completions", json=chat).status_code == 200
    # One upstream 429 (an error the account pays for) and one call refused before routing.
    for sim_account in pool.sim_accounts:
        pool.sim.script(
            sim_account.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="1")
        )
    assert client.post("/v1/responses", json=BODY).status_code == 429  # on both accounts (FAIL-1)
    for sim_account in pool.sim_accounts:
        pool.sim.clear_script(sim_account.id)
    for account_id in pool.account_ids:
        assert pool.admin.post(f"/api/accounts/{account_id}/resume").status_code == 200
    member, _session = pool.gateway.member(pool.admin, "bob", rpm=1)
    key = pool.admin.post(f"/api/users/{member['id']}/keys", json={"name": "k", "group_id": 1}).json()
    bob = pool.client(key["secret"])
    bob.post("/v1/responses", json=BODY)
    refused = bob.post("/v1/responses", json=BODY)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "member_rate_limited"

    records = recorded(pool, 9)
    samples = scrape(pool)
    # Every call counted once, under its outcome, provider, protocol and operation.
    expected: dict[tuple[str, str, str, str], int] = {}
    for record in records:
        labels = (record["outcome"], record["provider"] or "none", record["protocol"], record["operation"])
        expected[labels] = expected.get(labels, 0) + 1
    counted = {
        (labels["outcome"], labels["provider"], labels["protocol"], labels["operation"]): number
        for (name, label_items), number in samples.items()
        if name == "sublane_requests_total"
        for labels in [dict(label_items)]
    }
    assert counted == expected
    assert value(samples, "sublane_requests_total", outcome="rejected", provider="none", protocol="responses",
                 operation="responses") == 1  # fmt: skip
    assert value(samples, "sublane_requests_total", outcome="error", provider="codex", protocol="responses",
                 operation="responses") == 1  # fmt: skip
    # The upstream status each call ended with.
    statuses: dict[str, int] = {}
    for record in records:
        if record["upstream_status"] is not None:
            statuses[str(record["upstream_status"])] = statuses.get(str(record["upstream_status"]), 0) + 1
    assert statuses["429"] == 1
    for status, number in statuses.items():
        assert value(samples, "sublane_upstream_responses_total", provider="codex", status=status) == number
    # Histograms: one observation per call, sums equal to the recorded durations.
    routed = [
        record for record in records if record["provider"] == "codex" and record["protocol"] == "responses"
    ]
    duration = {"provider": "codex", "protocol": "responses"}
    assert value(samples, "sublane_request_duration_seconds_count", **duration) == len(routed)
    assert value(samples, "sublane_request_duration_seconds_bucket", **duration, le="+Inf") == len(routed)
    assert (
        abs(
            value(samples, "sublane_request_duration_seconds_sum", **duration)
            - sum(record["duration_ms"] for record in routed) / 1000
        )
        < 1e-6
    )
    with_output = [record for record in routed if record["first_token_ms"] is not None]
    assert len(with_output) >= 4
    assert value(samples, "sublane_request_first_output_seconds_count", **duration) == len(with_output)
    buckets = [
        (float(dict(labels)["le"]), number)
        for (name, labels), number in samples.items()
        if name == "sublane_request_first_output_seconds_bucket" and dict(labels)["provider"] == "codex"
        and dict(labels)["protocol"] == "responses"
    ]  # fmt: skip
    counts = [number for _, number in sorted(buckets)]
    assert counts == sorted(counts) and counts[-1] == len(with_output)  # cumulative
    # State read at scrape time: nothing in flight, the limits, the states, nobody waiting.
    assert value(samples, "sublane_workspace_in_use") == 0
    assert value(samples, "sublane_workspace_capacity") == pool.gateway.settings.workspace_capacity
    for account_id in pool.account_ids:
        labels = {"account_id": str(account_id), "provider": "codex"}
        assert value(samples, "sublane_account_in_flight", **labels) == 0
        assert value(samples, "sublane_account_max_concurrency", **labels) == 30
        states = [
            s for s in ("ready", "cooling") if value(samples, "sublane_account_state", **labels, state=s)
        ]
        assert len(states) == 1
    assert value(samples, "sublane_waiting") == 0
    assert value(samples, "sublane_history_backlog") == 0
    assert value(samples, "sublane_history_dropped_total") == 0
    assert ("process_resident_memory_bytes", ()) in samples


def test_ops_8_cooldowns_quota_waiters_and_in_flight_are_read_at_scrape_time(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(metrics_token=TOKEN, wait_timeout_s=20)
    account_id = pool.account_ids[0]
    labels = {"account_id": str(account_id), "provider": "codex"}
    assert (
        pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 1}).status_code == 200
    )
    # What the upstream reports on every answer's headers is what the observer saves (QUOTA-2).
    pool.sim.set_quota(pool.sim_accounts[0].id, "primary", used_percent=42.5, reset_in_s=3600)
    # One stream holds the only slot; a second call waits for it.
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.stall(after_deltas=1, stall_ms=None))
    holder = pool.client()
    waiter_done = threading.Event()

    def wait_for_slot() -> None:
        pool.client().post("/v1/responses", json=BODY, timeout=30)
        waiter_done.set()

    with holder.stream("POST", "/v1/responses", json=BODY) as stream:
        lines = stream.iter_lines()
        while "output_text.delta" not in next(lines):
            pass
        thread = threading.Thread(target=wait_for_slot, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while value(samples := scrape(pool), "sublane_group_waiters", group_id="1") != 1:
            assert time.monotonic() < deadline, "the second call never waited"
            time.sleep(0.05)
        assert value(samples, "sublane_account_in_flight", **labels) == 1
        assert value(samples, "sublane_account_max_concurrency", **labels) == 1
        assert value(samples, "sublane_account_waiters", **labels) == 1
        assert value(samples, "sublane_account_state", **labels, state="busy") == 1
        assert value(samples, "sublane_workspace_in_use") == 2  # the holder and the waiter
        assert value(samples, "sublane_quota_used_percent", **labels, window="primary") == 42.5
    assert waiter_done.wait(15)  # the slot went to the waiter once the holder left
    thread.join(5)
    # An account cooling after a 429 shows its cooldown; Clear cooldown removes it.
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="120")
    )
    pool.client().post("/v1/responses", json=BODY)
    samples = scrape(pool)
    assert value(samples, "sublane_account_state", **labels, state="cooling") == 1
    assert 100 < value(samples, "sublane_account_cooldown_seconds", **labels) <= 120
    pool.admin.post(f"/api/accounts/{account_id}/resume")
    samples = scrape(pool)
    assert value(samples, "sublane_account_cooldown_seconds", **labels) == 0
    assert value(samples, "sublane_group_waiters", group_id="1") == 0


def test_ops_8_metrics_need_an_admin_session_or_the_token(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(metrics_token=TOKEN)
    anonymous = pool.gateway.client()
    assert anonymous.get("/metrics").status_code == 401
    assert anonymous.get("/metrics").json()["error"]["code"] == "unauthenticated"
    for wrong in ("Bearer not-the-token", f"Basic {TOKEN}", f"Bearer {pool.key}"):
        assert anonymous.get("/metrics", headers={"authorization": wrong}).status_code == 401
    _member, member_session = pool.gateway.member(pool.admin, "bob")
    assert member_session.get("/metrics").status_code == 403
    assert pool.admin.get("/metrics").status_code == 200
    assert scrape(pool)  # the token


def test_ops_8_without_a_token_only_an_admin_session_reads_metrics(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    assert pool.gateway.client().get("/metrics", headers={"authorization": "Bearer guess"}).status_code == 401
    assert pool.admin.get("/metrics").status_code == 200


def test_ops_8_metric_labels_carry_no_names_emails_or_secrets(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2, metrics_token=TOKEN)
    pool.client().post("/v1/responses", json=BODY)
    text = pool.admin.get("/metrics").text
    assert 'account_id="' in text
    forbidden = [pool.key, "codex-1", "codex-2", "admin", TOKEN]
    for sim_account in pool.sim_accounts:
        forbidden += [sim_account.email, sim_account.api_key, *secrets_in(sim_account.credentials)]
    for item in forbidden:
        assert item not in text, item
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert set(sample.labels) <= {
                "outcome", "provider", "protocol", "operation", "status", "le", "account_id", "group_id",
                "state", "window",
            }, sample  # fmt: skip


def test_ops_8_metrics_switched_off_answer_404(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(metrics_enabled=False)
    pool.client().post("/v1/responses", json=BODY)
    answer = pool.admin.get("/metrics")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"
    assert httpx.get(f"{pool.gateway.url}/healthz").status_code == 200
