"""Webhooks (ALERT-1, ALERT-3, ALERT-4) with a real receiver process that verifies signatures,
answers 500 a few times, and is down across a gateway restart."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from gateway_pool import Pool, settings_for

from sublane_gateway.testing import running_gateway
from sublane_sim import Simulator

RECEIVER = Path(__file__).with_name("webhook_receiver.py")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def receiver(port: int, secret: str, log: Path, fail: int = 0) -> Iterator[None]:
    command = [sys.executable, str(RECEIVER), "--port", str(port), "--secret", secret, "--log", str(log)]
    process = subprocess.Popen([*command, "--fail", str(fail)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the receiver did not start"
                time.sleep(0.05)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def _received(log: Path, count: int, timeout_s: float = 15.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


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


def test_alert_2_a_cooling_account_and_a_limited_model_are_told_once_without_secrets(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from sublane_sim import Behaviour

    pool = make_pool(alert_retry_s=0.2, failover_attempts=0)
    port, log = _free_port(), tmp_path / "received.jsonl"
    events = {"url": f"http://127.0.0.1:{port}/a", "events": ["account.cooling", "account.reauth_required"]}
    made = pool.admin.post("/api/webhooks", json=events).json()
    account = pool.sim_accounts[0]
    limited = Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="30")
    pool.sim.script(account.id, limited, limited)
    with receiver(port, made["secret"], log):
        body = {"model": "gpt-5-codex", "input": "hi"}
        assert pool.client().post("/v1/responses", json=body).status_code == 429
        pool.admin.post(f"/api/accounts/{pool.account_ids[0]}/resume")
        assert (
            pool.client().post("/v1/responses", json=body).status_code == 429
        )  # a second 429: cooling again
        got = _received(log, 1)
        time.sleep(0.5)  # nothing more comes: the same cooldown is told once
        got = _received(log, 1)
    assert [item["event"] for item in got] == ["account.cooling"]
    data = got[0]["body"]["data"]
    assert data["account"] == {"id": pool.account_ids[0], "name": "codex-1"} and data["retry_after_s"] == 30
    assert account.email not in json.dumps(got) and account.access_token not in json.dumps(got)
