"""The gateway's CPU time per model request: a figure that holds up on a busy machine.

``python bench/cpu.py`` starts the mock and ``sublane serve`` the way ``bench/run.py`` does (gateway
on core 0, mock and driver on core 1), warms up, then runs closed-loop non-streaming Responses calls
at concurrency 16 (``BENCH_CPU_CONCURRENCY``) for ``BENCH_CPU_SECONDS`` (default 10) and divides
the gateway process's CPU seconds (user + system, from ``/proc``) by the requests it answered.
Streaming calls (4 deltas, instant mock) are measured the same way. ``BENCH_CPU_ACCOUNTS=N`` puts
N Codex accounts in the member's group instead of one (selection asks about every candidate on
every request, so a pool's size is part of the cost). Latency and throughput depend
on what else runs on the machine; CPU per request much less, so this is the number to compare
between two versions of the hot path when no quiet machine is at hand.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import uvloop
from driver import Target, closed_loop
from run import (
    DRIVER_CORE,
    Processes,
    add_codex_accounts,
    cpu_seconds,
    log,
    responses_body,
    start_mock_and_gateway,
)

SECONDS = float(os.environ.get("BENCH_CPU_SECONDS", "10"))
CONCURRENCY = int(os.environ.get("BENCH_CPU_CONCURRENCY", "16"))
ACCOUNTS = int(os.environ.get("BENCH_CPU_ACCOUNTS", "1"))


async def per_request(pid: int, target: Target, raw: bytes) -> dict[str, Any]:
    """CPU milliseconds of ``pid`` per answered request under one closed-loop load."""
    await closed_loop(target, raw, CONCURRENCY, 2.0)  # warm-up
    before = cpu_seconds(pid)
    result = await closed_loop(target, raw, CONCURRENCY, SECONDS)
    spent = cpu_seconds(pid) - before
    answered = int(result["requests"] or 0)
    return {
        "requests": answered,
        "errors": result["errors"],
        "cpu_s": round(spent, 3),
        "cpu_ms_per_request": round(spent * 1000 / answered, 3) if answered else None,
        "rps": result["rps"],
        "p50_ms": result["p50_ms"],
    }


async def main_async(procs: Processes, tmp: Path) -> dict[str, Any]:
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    if ACCOUNTS > 1:
        add_codex_accounts(f"http://{gateway.host}:{gateway.port}", ACCOUNTS - 1)
    out: dict[str, Any] = {
        "concurrency": CONCURRENCY,
        "seconds": SECONDS,
        "accounts": ACCOUNTS,
        "load_before": os.getloadavg(),
    }
    for label, stream in (("non_streaming", False), ("streaming", True)):
        log(f"CPU per request: {label}")
        raw = gateway.request(responses_body(stream=stream))
        out[label] = await per_request(gateway_proc.pid, gateway, raw)
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-cpu-") as tmp:
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp))), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
