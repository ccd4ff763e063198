"""What sharing the limits through Redis costs, and what a second worker gives (issue #32, SCALE).

``python bench/scale_out.py`` starts the mock on the driver's core and a Redis server
(``redis-server``, Debian's, unpinned), then, one after the other, the same seeded gateway
(``bench/run.py``'s member: budget rules, no member limits; one Codex account with room for every
call) three ways:

- **embedded**: SQLite, one process — the default, as before this issue;
- **redis**: SQLite and ``SUBLANE_REDIS_URL``, one process — every slot taken and given back in
  Redis, the usage of a member with budgets published;
- **workers**: the same with ``SUBLANE_WORKERS=2``, both processes on both cores.

``BENCH_SCALE_VARIANTS`` picks some of them (comma-separated); **redis-member** is **redis** with a
member concurrency limit too large to refuse (the member's ticket taken and given back in Redis as
well, issue #49). ``BENCH_SCALE_BEFORE``, a folder holding another checkout's code (``git archive``),
adds **redis-before** and **redis-member-before**: the same with that code first on ``PYTHONPATH``,
alternated with the rest in one sitting.

For each: closed-loop non-streaming Responses calls (``BENCH_SCALE_CONCURRENCY``, default 8, for
``BENCH_SCALE_SECONDS``, default 10, rounds alternating), the p50 and p99, requests per second,
the gateway's CPU per request (every process of it) and the calls made to Redis per request
(from ``INFO commandstats``, the replicas' background tick subtracted by a measured idle second).
The JSON goes to stdout; BENCHMARKS.md says what it means.
"""

# ruff: noqa: S603, S607, ASYNC251  (set-up between measurements: our own processes, in order)
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import uvloop
from driver import closed_loop
from run import (
    ADMIN,
    DRIVER_CORE,
    GATEWAY_CORE,
    Processes,
    log,
    mint_codex_credentials,
    responses_body,
    seed_gateway,
    set_account_concurrency,
    start_gateway,
    wait_http,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from driver import Target
from ports import free_port
from redis_server import RedisServer  # the tests' real Redis

SECONDS = float(os.environ.get("BENCH_SCALE_SECONDS", "10"))
ROUNDS = int(os.environ.get("BENCH_SCALE_ROUNDS", "2"))
CONCURRENCY = int(os.environ.get("BENCH_SCALE_CONCURRENCY", "8"))
ROOT = Path(__file__).resolve().parents[1]
VARIANTS = os.environ.get("BENCH_SCALE_VARIANTS", "embedded,redis,workers").split(",")
BEFORE = os.environ.get("BENCH_SCALE_BEFORE", "")


def before_path() -> str:
    """``PYTHONPATH`` that puts the ``BENCH_SCALE_BEFORE`` checkout's packages first."""
    root = Path(BEFORE)
    folders = [root / "apps" / "gateway", *sorted((root / "packages").glob("sublane-*"))]
    folders += sorted((root / "packages" / "sublane-providers").glob("*/"))
    return os.pathsep.join(str(folder) for folder in folders)


def set_member_concurrency(url: str, limit: int) -> None:
    """PATCH the bench member's ``member_concurrency`` (the member ``seed_gateway`` made)."""
    with httpx.Client(base_url=url, timeout=30) as admin:
        admin.post("/api/auth/login", json={"username": ADMIN[0], "password": ADMIN[1]}).raise_for_status()
        users = admin.get("/api/users").raise_for_status().json()
        rows = users["items"] if isinstance(users, dict) else users
        user = next(row for row in rows if row["username"] == "bench")
        admin.patch(f"/api/users/{user['id']}", json={"member_concurrency": limit}).raise_for_status()


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and every live process below it."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += times.get(current, 0.0)
        todo += children.get(current, [])
    return total


def redis_commands(port: int) -> int:
    """Calls clients made to Redis so far: script calls and plain reads (the commands a script runs
    inside are not counted: they are no round trip). Calls sent in one pipeline share a round trip."""
    out = subprocess.run(
        ["redis-cli", "-p", str(port), "INFO", "commandstats"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    total = 0
    for line in out.splitlines():
        name, _, stats = line.partition(":")
        if name in ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_get", "cmdstat_ping"):
            total += int(stats.split(",")[0].split("=")[1])
    return total


async def measure(
    label: str, gateway: Target, pid: int, redis_port: int | None, raw: bytes, redis_pid: int = 0
) -> dict[str, Any]:
    await closed_loop(gateway, raw, CONCURRENCY, 2.0)  # warm-up
    idle_commands = 0
    if redis_port is not None:  # the replica's own tick (version poll, renewals) per second
        before = redis_commands(redis_port)
        time.sleep(1.0)
        idle_commands = redis_commands(redis_port) - before
    cpu_before = tree_cpu(pid)
    redis_cpu_before = tree_cpu(redis_pid) if redis_port is not None else 0.0
    commands_before = redis_commands(redis_port) if redis_port is not None else 0
    started = time.perf_counter()
    result = await closed_loop(gateway, raw, CONCURRENCY, SECONDS)
    elapsed = time.perf_counter() - started
    spent = tree_cpu(pid) - cpu_before
    answered = int(result["requests"] or 0)
    row: dict[str, Any] = {
        "requests": answered,
        "errors": result["errors"],
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "rps": result["rps"],
        "cpu_ms_per_request": round(spent * 1000 / answered, 3) if answered else None,
    }
    if redis_port is not None and answered:
        commands = redis_commands(redis_port) - commands_before - idle_commands * elapsed
        row["redis_commands_per_request"] = round(commands / answered, 2)
        row["redis_cpu_ms_per_request"] = round((tree_cpu(redis_pid) - redis_cpu_before) * 1000 / answered, 4)
    log(f"scale bench: {label}: {row}")
    return row


async def main_async(procs: Processes, tmp: Path) -> dict[str, Any]:
    mock_port = free_port()
    mock_url = f"http://127.0.0.1:{mock_port}"
    mock = procs.start(
        [
            "taskset",
            "-c",
            DRIVER_CORE,
            sys.executable,
            str(ROOT / "bench" / "mock.py"),
            "--port",
            str(mock_port),
        ],
        dict(os.environ),
        tmp / "mock.log",
    )
    wait_http(f"{mock_url}/_mock/stats", mock)
    redis = RedisServer().start()  # unpinned: on a busy core its replies would wait for a time slice
    assert redis.process is not None
    redis_pid = redis.process.pid
    every: dict[str, tuple[dict[str, str], str, int | None]] = {
        "embedded": ({}, GATEWAY_CORE, None),
        "redis": ({"SUBLANE_REDIS_URL": redis.url}, GATEWAY_CORE, redis.port),
        "redis-member": ({"SUBLANE_REDIS_URL": redis.url}, GATEWAY_CORE, redis.port),
        "workers": ({"SUBLANE_REDIS_URL": redis.url, "SUBLANE_WORKERS": "2"}, "0,1", redis.port),
    }
    variants = {label: every[label] for label in VARIANTS}
    if BEFORE:
        for label in [label for label in variants if label.startswith("redis")]:
            env, cores, port = variants[label]
            variants[f"{label}-before"] = (env | {"PYTHONPATH": before_path()}, cores, port)
    out: dict[str, Any] = {"seconds": SECONDS, "concurrency": CONCURRENCY, "load_before": os.getloadavg()}
    try:
        for round_ in range(ROUNDS):
            for label, (env, cores, redis_port) in variants.items():
                log(f"scale bench: round {round_ + 1}, {label}")
                namespace = f"bench-{label}-{round_}"
                child, url = start_gateway(
                    procs,
                    tmp,
                    mock_url,
                    label=f"{label}-{round_}",
                    extra_env=env | ({"SUBLANE_REDIS_NAMESPACE": namespace} if redis_port else {}),
                    cores=cores,
                )
                key, _ = seed_gateway(url, mint_codex_credentials()["credentials"])
                set_account_concurrency(url, 1, 1000)  # room for every call: admission, not waiting
                if label.startswith("redis-member"):
                    set_member_concurrency(url, 1000)
                time.sleep(1.5)  # the limit reached every worker
                port = int(url.rsplit(":", 1)[1])
                gateway = Target(
                    "gateway", "127.0.0.1", port, "/v1/responses", {"Authorization": f"Bearer {key}"}
                )
                raw = gateway.request(responses_body(stream=False))
                out.setdefault(label, []).append(
                    await measure(label, gateway, child.pid, redis_port, raw, redis_pid)
                )
                child.terminate()
                child.wait(timeout=30)
    finally:
        redis.remove()
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-scale-") as tmp:
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp))), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
