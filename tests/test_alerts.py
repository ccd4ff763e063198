"""Webhooks (ALERT-1, ALERT-3, ALERT-4) with a real receiver process that verifies signatures,
answers 500 a few times, and is down across a gateway restart."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from gateway_pool import Pool, settings_for
from ports import free_port as _free_port
from webhook_receiver import received as _received
from webhook_receiver import receiver

from sublane_gateway.testing import running_gateway
from sublane_sim import Simulator


def _deliveries(admin: httpx.Client, hook: int, status: str, timeout_s: float = 15.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        items: list[dict[str, Any]] = admin.get(f"/api/webhooks/{hook}/deliveries").json()["items"]
        if (items and all(item["status"] == status for item in items)) or time.monotonic() > deadline:
            return items
        time.sleep(0.05)


def test_alert_1_webhooks_are_registered_with_a_secret_shown_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    admin = pool.admin
    made = admin.post(
        "/api/webhooks", json={"url": "https://hooks.example/alerts", "events": ["account.cooling"]}
    )
    assert made.status_code == 201, made.text
    secret = made.json()["secret"]
    assert secret.startswith("whsec_") and made.json()["format"] == "json" and made.json()["enabled"] is True
    listed = admin.get("/api/webhooks").json()["items"]
    assert len(listed) == 1 and "secret" not in listed[0]
    hook = made.json()["id"]
    changed = admin.patch(
        f"/api/webhooks/{hook}", json={"format": "slack", "events": ["*"], "enabled": False}
    )
    assert (
        changed.status_code == 200
        and changed.json()["format"] == "slack"
        and changed.json()["events"] == ["*"]
    )
    assert admin.post("/api/webhooks", json={"url": "ftp://x.example/"}).status_code == 400
    assert (
        admin.post("/api/webhooks", json={"url": "https://x.example/", "events": ["nope"]}).status_code == 400
    )
    for number in range(15):
        assert admin.post("/api/webhooks", json={"url": f"https://x.example/{number}"}).status_code == 201
    full = admin.post("/api/webhooks", json={"url": "https://x.example/17"})
    assert full.status_code == 409 and full.json()["error"]["code"] == "webhook_limit_reached"
    assert admin.delete(f"/api/webhooks/{hook}").status_code == 204
    assert admin.patch(f"/api/webhooks/{hook}", json={"enabled": True}).status_code == 404
    _member, session = pool.gateway.member(pool.admin, "mo")
    assert session.get("/api/webhooks").status_code == 403
    assert secret not in json.dumps(admin.get("/api/audit").json())
    with pool.gateway.engine.connect() as connection:
        from sqlalchemy import text

        stored = json.dumps(
            [list(row) for row in connection.execute(text("SELECT * FROM webhooks"))], default=repr
        )
    assert secret not in stored


def test_alert_3_4_a_test_event_is_signed_retried_with_one_delivery_id_and_listed(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool(alert_retry_s=0.2)
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = pool.admin.post(
        "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook", "events": ["*"]}
    ).json()
    with receiver(port, made["secret"], log, fail=2):
        queued = pool.admin.post(f"/api/webhooks/{made['id']}/test")
        assert queued.status_code == 202
        got = _received(log, 3)
        delivered = _deliveries(pool.admin, made["id"], "delivered")
    assert [item["answered"] for item in got] == [500, 500, 200]
    assert {item["delivery"] for item in got} == {queued.json()["event_id"]}  # the same id on each retry
    assert all(item["valid"] and item["event"] == "webhook.test" for item in got)
    assert all(item["content_type"] == "application/json" for item in got)
    body = got[-1]["body"]
    assert body["id"] == queued.json()["event_id"] and body["event"] == "webhook.test"
    assert body["workspace"] == "SubLane" and body["data"] == {"webhook": {"id": made["id"]}}
    (entry,) = delivered
    assert entry["status"] == "delivered" and entry["attempts"] == 3 and entry["last_status"] == 200
    assert entry["id"] == queued.json()["event_id"]


def test_alert_3_the_slack_format_sends_one_line(make_pool: Callable[..., Pool], tmp_path: Path) -> None:
    pool = make_pool(alert_retry_s=0.2)
    port, log = _free_port(), tmp_path / "received.jsonl"
    body = {"url": f"http://127.0.0.1:{port}/slack", "format": "slack"}
    made = pool.admin.post("/api/webhooks", json=body).json()
    with receiver(port, made["secret"], log):
        pool.admin.post(f"/api/webhooks/{made['id']}/test")
        (got,) = _received(log, 1)
    assert set(got["body"]) == {"text"} and "webhook.test" in got["body"]["text"]
    assert got["valid"] and got["delivery"]  # the signed headers come along too


def test_alert_4_queued_events_survive_a_restart_while_the_receiver_is_down(
    sim: Simulator, tmp_path: Path
) -> None:
    settings = settings_for(sim, tmp_path / "data", alert_retry_s=0.2)
    port, log = _free_port(), tmp_path / "received.jsonl"
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        made = admin.post("/api/webhooks", json={"url": f"http://127.0.0.1:{port}/down"}).json()
        queued = admin.post(f"/api/webhooks/{made['id']}/test").json()["event_id"]
        deadline = time.monotonic() + 10
        while True:  # tried, and refused: nobody listens
            (item,) = admin.get(f"/api/webhooks/{made['id']}/deliveries").json()["items"]
            if item["attempts"] >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert item["status"] == "pending" and item["last_error"] and item["next_attempt_at"]
    with receiver(port, made["secret"], log), running_gateway(settings) as gateway:
        got = _received(log, 1)
        delivered = _deliveries(gateway.admin(), made["id"], "delivered")
    assert [entry["delivery"] for entry in got] == [queued] and got[0]["valid"]
    assert delivered[0]["status"] == "delivered"


def _hook(pool: Pool, port: int, events: list[str]) -> dict[str, Any]:
    made: dict[str, Any] = pool.admin.post(
        "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/a", "events": events}
    ).json()
    return made


def _events(got: list[dict[str, Any]]) -> list[str]:
    return [str(item["event"]) for item in got]


def _no_secret_of(account: Any, got: list[dict[str, Any]]) -> None:
    text = json.dumps(got)
    for secret in (account.email, account.access_token, account.refresh_token):
        assert secret not in text


def test_alert_2_a_cooling_account_its_empty_pool_and_its_recovery_are_each_told_once(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    """account.cooling when the cooldown starts (not again while it lasts), pool.unavailable once per
    group and model in 10 minutes, account.recovered when Clear cooldown ends it; then a new
    cooldown is a new account.cooling."""
    from sublane_sim import Behaviour

    pool = make_pool(alert_retry_s=0.2, failover_attempts=0)
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = _hook(pool, port, ["*"])
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    limited = Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="30")
    pool.sim.script(account.id, limited, limited)
    body = {"model": "gpt-5-codex", "input": "hi"}
    with receiver(port, made["secret"], log):
        assert pool.client().post("/v1/responses", json=body).status_code == 429  # the upstream's
        for _ in range(3):  # SubLane's own refusals while it cools: the pool is empty
            refused = pool.client().post("/v1/responses", json=body)
            assert refused.status_code == 429 and refused.json()["error"]["code"] == "account_cooling"
        assert _events(_received(log, 2)) == ["account.cooling", "pool.unavailable"]
        assert pool.admin.post(f"/api/accounts/{account_id}/resume").status_code == 200
        assert _events(_received(log, 3))[2] == "account.recovered"
        assert pool.client().post("/v1/responses", json=body).status_code == 429  # cooling again
        got = _received(log, 4)
        time.sleep(0.5)  # and nothing more
        got = _received(log, 4)
    assert _events(got) == ["account.cooling", "pool.unavailable", "account.recovered", "account.cooling"]
    assert all(item["valid"] for item in got)
    cooling, empty, recovered = (item["body"]["data"] for item in got[:3])
    named = {"id": account_id, "name": "codex-1"}
    assert cooling == {"account": named, "reason": "rate_limit_exceeded", "retry_after_s": 30}
    assert empty == {
        "group": {"id": 1, "name": "default"},
        "model": "gpt-5-codex",
        "reason": "account_cooling",
    }
    assert recovered == {"account": named, "cleared": "cooldown"}
    assert {item["body"]["workspace"] for item in got} == {"SubLane"}
    _no_secret_of(account, got)


def test_alert_2_reauthorization_needed_and_done_is_told_in_the_same_transaction(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from sublane_sim import RefreshOutcome

    pool = make_pool(alert_retry_s=0.2, account_options={"access_ttl_s": 100})
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = _hook(pool, port, ["account.reauth_required", "account.recovered"])
    pool.sim.script_refresh(account.id, RefreshOutcome(kind="refresh_token_invalidated"))
    with receiver(port, made["secret"], log):
        refused = pool.client().post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"})
        assert refused.json()["error"]["code"] == "reauth_required"
        assert _events(_received(log, 1)) == ["account.reauth_required"]
        reimported = pool.admin.post(
            f"/api/accounts/{account_id}/credentials", json={"credentials": pool.sim.credentials(account.id)}
        )
        assert reimported.status_code == 200
        got = _received(log, 2)
    assert _events(got) == ["account.reauth_required", "account.recovered"]
    named = {"id": account_id, "name": "codex-1"}
    assert got[0]["body"]["data"] == {"account": named, "reason": "refresh_token_invalidated"}
    assert got[1]["body"]["data"] == {"account": named, "cleared": "reauth_required"}
    _no_secret_of(account, got)


def test_alert_2_the_third_failed_refresh_in_a_row_is_told_once(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from sublane_sim import RefreshOutcome

    pool = make_pool(alert_retry_s=0.2, account_options={"access_ttl_s": 100})
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = _hook(pool, port, ["account.refresh_failing"])
    pool.sim.script_refresh(account.id, *[RefreshOutcome(kind="error", status=500)] * 4)
    with receiver(port, made["secret"], log):
        for attempt, backoff in enumerate((30, 60, 120, 240), start=1):
            pool.client().post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"})
            assert pool.sim.counters(account.id).refreshes == attempt
            if attempt < 3:
                time.sleep(0.3)
                assert _received(log, 1, timeout_s=0.1) == []  # not before the third
            pool.gateway.clock.advance(backoff)
        got = _received(log, 1)
        time.sleep(0.5)
        got = _received(log, 1)
    assert _events(got) == ["account.refresh_failing"]
    data = got[0]["body"]["data"]
    assert data == {"account": {"id": account_id, "name": "codex-1"}, "failures": 3, "reason": "http_500"}
    _no_secret_of(account, got)


def test_alert_2_quota_exhausted_and_recovered_follow_the_observations(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool(alert_retry_s=0.2)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = _hook(pool, port, ["account.quota_exhausted", "account.quota_recovered"])
    body = {"model": "gpt-5-codex", "input": "hi"}
    with receiver(port, made["secret"], log):
        assert pool.client().post("/v1/responses", json=body).status_code == 200
        pool.sim.set_quota(account.id, "primary", used_percent=100, reset_in_s=600)
        refused = pool.client().post("/v1/responses", json=body)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "quota_exhausted"
        assert _events(_received(log, 1)) == ["account.quota_exhausted"]
        pool.client().post("/v1/responses", json=body)  # refused before the upstream: nothing new
        pool.sim.set_quota(account.id, "primary", used_percent=5, reset_in_s=18000)
        pool.gateway.clock.advance(130)  # the exhausted observation went stale (QUOTA-3)
        assert pool.client().post("/v1/responses", json=body).status_code == 200
        got = _received(log, 2)
        time.sleep(0.5)
        got = _received(log, 2)
    assert _events(got) == ["account.quota_exhausted", "account.quota_recovered"]
    exhausted, recovered = (item["body"]["data"] for item in got)
    named = {"id": account_id, "name": "codex-1"}
    assert exhausted["account"] == named and exhausted["model"] is None and exhausted["window"] == "primary"
    assert recovered == {"account": named, "model": None, "window": "primary"}


def test_alert_4_a_silent_receiver_times_out_is_retried_and_holds_up_no_other(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool(alert_retry_s=0.2)
    silent_port, silent_log = _free_port(), tmp_path / "silent.jsonl"
    quick_port, quick_log = _free_port(), tmp_path / "quick.jsonl"
    silent, quick = _hook(pool, silent_port, ["*"]), _hook(pool, quick_port, ["*"])
    with (
        receiver(silent_port, silent["secret"], silent_log, silent=1),
        receiver(quick_port, quick["secret"], quick_log),
    ):
        started = time.monotonic()
        first = pool.admin.post(f"/api/webhooks/{silent['id']}/test").json()["event_id"]
        time.sleep(0.3)  # the silent receiver holds its first delivery
        second = pool.admin.post(f"/api/webhooks/{quick['id']}/test").json()["event_id"]
        assert [item["delivery"] for item in _received(quick_log, 1)] == [second]
        assert time.monotonic() - started < 5  # not behind the silent one's 10 s
        got = _received(silent_log, 2, timeout_s=30)
        delivered = _deliveries(pool.admin, silent["id"], "delivered", timeout_s=30)
    assert [item["delivery"] for item in got] == [first, first]  # the same id on the retry
    assert time.monotonic() - started >= 10  # the first try waited out the 10 s timeout
    assert delivered[0]["attempts"] == 2 and delivered[0]["last_error"] is None


def test_alert_2_a_providers_model_limit_is_told_as_model_limited(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from sublane_sim import Behaviour

    pool = make_pool(provider="antigravity", alert_retry_s=0.2)
    key = pool.key
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = _hook(pool, port, ["model.limited", "account.cooling"])
    pool.sim.script(account.id, Behaviour.error(429, error_code="RATE_LIMIT_EXCEEDED", retry_delay="120s"))
    api = pool.client(headers={"x-goog-api-key": key})
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with receiver(port, made["secret"], log):
        assert api.post("/v1beta/models/gemini-3-flash:generateContent", json=body).status_code == 429
        assert api.post("/v1beta/models/gemini-3-flash:generateContent", json=body).status_code == 429
        got = _received(log, 1)
        time.sleep(0.5)
        got = _received(log, 1)
    assert _events(got) == ["model.limited"]
    data = got[0]["body"]["data"]
    assert data["account"] == {
        "id": account_id,
        "name": pool.admin.get(f"/api/accounts/{account_id}").json()["name"],
    }
    assert data["model"] == "gemini-3-flash" and data["reason"] == "rate_limit_exceeded"
    assert 100 <= data["retry_after_s"] <= 120
    _no_secret_of(account, got)


def test_alert_2_a_successful_recovery_probe_tells_account_recovered(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from sublane_sim import Behaviour

    pool = make_pool(alert_retry_s=0.2, failover_attempts=0)
    port, log = _free_port(), tmp_path / "received.jsonl"
    made = _hook(pool, port, ["account.cooling", "account.recovered"])
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    pool.sim.script(account.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="2"))
    body = {"model": "gpt-5-codex", "input": "hi"}
    with receiver(port, made["secret"], log):
        assert pool.client().post("/v1/responses", json=body).status_code == 429
        pool.gateway.clock.advance(3)  # the cooldown is over: the next call is the recovery probe
        assert pool.client().post("/v1/responses", json=body).status_code == 200
        got = _received(log, 2)
    assert _events(got) == ["account.cooling", "account.recovered"]
    assert got[1]["body"]["data"] == {"account": {"id": account_id, "name": "codex-1"}, "cleared": "cooldown"}
