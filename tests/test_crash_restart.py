"""Crash and restart (issue #16, OPS-2, COOL-7, AFF-7, STORE-1): ``kill -9`` mid-stream and under
write load, then start again on the same data folder.

What is promised, and checked here: the database passes ``PRAGMA integrity_check``; bindings,
cooldowns and re-authorization state survive (quota observations are not stored by the gateway
yet: there is nothing of them to survive); no lease is stuck (slots are
process memory and start empty); every request that was answered 200 more than one writer interval
(100 ms) before the kill has its record. What can be lost is bounded: the records of calls that
ended within that last interval, and the call that was running (it never finished).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
from test_cli import SUBLANE, _env, _free_port

from sublane_sim import Behaviour, RefreshOutcome, Simulator

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}


@contextmanager
def _gateway(sim: Simulator, data_dir: Path, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    env = _env(data_dir, SUBLANE_ADMIN_USERNAME="admin", SUBLANE_ADMIN_PASSWORD="admin-pass-1", **sim.env())
    with log.open("a") as output:
        process = subprocess.Popen(
            [SUBLANE, "serve", "--port", str(port)], env=env, stdout=output, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                httpx.get(f"{url}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def _rows(data_dir: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(data_dir / "sublane.db") as connection:
        return list(connection.execute(sql).fetchall())


def test_ops_2_sigkill_mid_stream_and_under_write_load_loses_no_state(sim: Simulator, tmp_path: Path) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "serve.log"
    accounts = [sim.create_account("codex"), sim.create_account("codex")]
    with _gateway(sim, data_dir, log) as (url, process):
        admin = httpx.Client(base_url=url, timeout=30)
        assert admin.post(
            "/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}
        ).is_success
        ids = []
        for index, account in enumerate(accounts):
            body = {
                "provider": "codex",
                "name": f"c{index}",
                "credentials": account.credentials,
                "group_ids": [1],
            }
            ids.append(admin.post("/api/accounts/import", json=body).json()["id"])

        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        member = httpx.Client(base_url=url, timeout=30, headers={"authorization": f"Bearer {key}"})
        # State worth keeping: a binding, an account cooldown (a 429), a re-authorization mark.
        bound = member.post("/v1/responses", json=BODY, headers={"session_id": "thread-1"})
        assert bound.status_code == 200
        bound_account = next(i for i, a in zip(ids, accounts, strict=True) if sim.requests(account_id=a.id))
        other = next(i for i in ids if i != bound_account)
        other_sim = accounts[ids.index(other)]
        sim.script(other_sim.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="3600"))
        while other not in {row[0] for row in _rows(data_dir, "SELECT account_id FROM account_cooldowns")}:
            member.post("/v1/responses", json=BODY)
        sim.script(accounts[ids.index(bound_account)].id, Behaviour.error(401))
        sim.script_refresh(accounts[ids.index(bound_account)].id, RefreshOutcome(kind="invalid_grant"))
        refused = member.post("/v1/responses", json=BODY, headers={"session_id": "thread-1"})
        assert refused.status_code == 503
        admin.patch(f"/api/accounts/{other}", json={"name": "c1-renamed"})
        admin.post(f"/api/accounts/{other}/resume")  # clear the cooldown: the load needs an account
        # Write load: many short calls, then one long stream, killed in its middle.
        sim.set_default(other_sim.id, Behaviour.ok(deltas=2))
        with ThreadPoolExecutor(8) as workers:
            answers = list(workers.map(lambda _: member.post("/v1/responses", json=BODY), range(40)))
        answered = [r.headers["x-request-id"] for r in answers if r.status_code == 200]
        assert len(answered) == 40
        cooled = member.post("/v1/responses", json={**BODY, "model": "gpt-5-codex"})  # one more cooldown
        sim.script(other_sim.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="1800"))
        member.post("/v1/responses", json=BODY)
        sim.script(other_sim.id, Behaviour.ok(deltas=400, pacing_ms=20))
        time.sleep(0.3)  # past the writer's interval: everything answered so far is written
        with member.stream("POST", "/v1/responses", json={**BODY, "input": "long"}) as streaming:
            lines = streaming.iter_lines()
            for line in lines:
                if "output_text.delta" in line:
                    break
            os.kill(process.pid, signal.SIGKILL)  # mid-stream
            process.wait()
        assert cooled.status_code in (200, 429)
        member.close()
        admin.close()
    assert _rows(data_dir, "PRAGMA integrity_check") == [("ok",)]
    stored = {row[0] for row in _rows(data_dir, "SELECT request_id FROM request_records")}
    assert set(answered) <= stored, f"lost {len(set(answered) - stored)} records"
    with _gateway(sim, data_dir, log) as (url, _process):
        admin = httpx.Client(base_url=url, timeout=30)
        admin.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"})
        runtime = {item["id"]: item for item in admin.get("/api/accounts/runtime").json()["accounts"]}
        assert all(item["in_flight"] == 0 for item in runtime.values())  # no lease is stuck
        assert runtime[other]["state"] == "cooling"  # the cooldown survived (COOL-7)
        assert runtime[bound_account]["auth_state"] == "reauth_required"  # and the re-authorization
        assert _rows(data_dir, "SELECT account_id FROM affinity") == [(bound_account,)]  # the binding
        assert admin.post(f"/api/accounts/{other}/resume").is_success
        assert member_after(url, key).status_code == 200  # and the gateway serves again
        admin.close()


def member_after(url: str, key: str) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=30, headers={"authorization": f"Bearer {key}"}) as client:
        return client.post("/v1/responses", json=BODY)
