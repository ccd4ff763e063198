"""Webhooks configured during a burst of cooldowns: are model requests slowed? (issue #35, ALERT-4)

``python bench/alerts.py`` starts the mock and ``sublane serve`` as ``bench/cpu.py`` does, with two
groups: group 1 (the bench member, two accounts) carries the measured traffic — closed-loop
non-streaming Responses calls at concurrency 8 —, while group 2 (four accounts, the admin's key)
gets a burst beside it: calls the mock answers 429 (``Retry-After: 1``), so its accounts start and
end cooldowns all the time and its pool is empty (``account.cooling``, ``account.recovered``,
``pool.unavailable``). Two runs: no webhook, then 16 webhooks wanting every event, all pointing at a
receiver that accepts connections and never answers (each delivery waits out the 10 s timeout and
is retried). Compared: the measured traffic's p50, throughput and the gateway's CPU per request,
and how many alerts the outbox took meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import httpx
import uvloop
from driver import Target, closed_loop
from run import (
    ADMIN,
    DRIVER_CORE,
    Processes,
    add_codex_accounts,
    cpu_seconds,
    log,
    mint_codex_credentials,
    responses_body,
    start_mock_and_gateway,
)

SECONDS = float(os.environ.get("BENCH_ALERTS_SECONDS", "10"))
CONCURRENCY = 8
BURST_CONCURRENCY = 2
WEBHOOKS = 16


def silent_receiver() -> tuple[socket.socket, int]:
    """A listening socket nobody reads: connections are accepted by the kernel, never answered."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1024)
    return server, server.getsockname()[1]


def seed_burst_group(url: str) -> str:
    """Group 2 with four Codex accounts and an admin key in it; the key."""
    with httpx.Client(base_url=url, timeout=30) as admin:
        admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}).raise_for_status()
        group = admin.post("/api/groups", json={"name": "burst"}).json()["id"]
        for index in range(4):
            body = {
                "provider": "codex",
                "name": f"burst-{index}",
                "group_ids": [group],
                "credentials": mint_codex_credentials()["credentials"],
            }
            admin.post("/api/accounts/import", json=body).raise_for_status()
        admin.put(f"/api/groups/{group}/members", json={"user_ids": [1]}).raise_for_status()
        made = admin.post("/api/users/1/keys", json={"name": "burst", "group_id": group})
        made.raise_for_status()
        return str(made.json()["secret"])


def set_webhooks(url: str, port: int, count: int) -> None:
    with httpx.Client(base_url=url, timeout=30) as admin:
        admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}).raise_for_status()
        for hook in admin.get("/api/webhooks").json()["items"]:
            admin.delete(f"/api/webhooks/{hook['id']}").raise_for_status()
        for index in range(count):
            body = {"url": f"http://127.0.0.1:{port}/hook-{index}", "events": ["*"]}
            admin.post("/api/webhooks", json=body).raise_for_status()


def outbox_rows(database: Path) -> int:
    with sqlite3.connect(database) as db:
        return int(db.execute("SELECT count(*) FROM webhook_deliveries").fetchone()[0])


async def measured(pid: int, target: Target, burst: Target, database: Path) -> dict[str, Any]:
    raw = target.request(responses_body(stream=False))
    burst_body = json.loads(responses_body(stream=False))
    burst_body["instructions"] += " bench:ratelimit"
    burst_raw = burst.request(json.dumps(burst_body).encode())
    await closed_loop(target, raw, CONCURRENCY, 2.0)  # warm-up
    rows_before = outbox_rows(database)
    before = cpu_seconds(pid)
    burst_task = asyncio.ensure_future(closed_loop(burst, burst_raw, BURST_CONCURRENCY, SECONDS))
    result = await closed_loop(target, raw, CONCURRENCY, SECONDS)
    burst_result = await burst_task
    spent = cpu_seconds(pid) - before
    answered = int(result["requests"] or 0)
    return {
        "requests": answered,
        "errors": result["errors"],
        "p50_ms": result["p50_ms"],
        "rps": result["rps"],
        "cpu_ms_per_request": round(spent * 1000 / (answered + int(burst_result["requests"] or 0)), 3),
        "burst_requests": burst_result["requests"],
        "alerts_queued": outbox_rows(database) - rows_before,
    }


async def main_async(procs: Processes, tmp: Path) -> dict[str, Any]:
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    url = f"http://{gateway.host}:{gateway.port}"
    add_codex_accounts(url, 1)
    burst = Target(
        "burst",
        gateway.host,
        gateway.port,
        "/v1/responses",
        {"Authorization": f"Bearer {seed_burst_group(url)}"},
    )
    database = tmp / "data-gateway" / "sublane.db"
    receiver, port = silent_receiver()
    out: dict[str, Any] = {"seconds": SECONDS, "load_before": os.getloadavg()}
    try:
        for label, hooks in (("no_webhooks", 0), ("webhooks", WEBHOOKS), ("no_webhooks_again", 0)):
            log(f"alerts bench: {label}")
            set_webhooks(url, port, hooks)
            out[label] = await measured(gateway_proc.pid, gateway, burst, database)
    finally:
        receiver.close()
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-alerts-") as tmp:
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp))), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
