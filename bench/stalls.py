"""What may hold the event loop at concurrency 1, counted in CPU time: garbage collections by
generation, the history writer's batches, every thread's CPU (issue #49's tails).

``python bench/stalls.py`` starts the mock and ``sublane serve`` as ``bench/cpu.py`` does, the gateway
with ``bench/stallwatch`` on ``PYTHONPATH``; after a warm-up it sends ``BENCH_STALLS_SECONDS``
(default 20) of sequential non-streaming Responses calls (one connection, like S1) and prints, per
request: collections of each generation and their CPU time, the writer's batches and their CPU
time, and each thread's CPU. The latencies it also prints are wall-clock: on a busy machine they
say more about the machine than about the gateway.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop
from driver import closed_loop
from run import DRIVER_CORE, ROOT, Processes, log, responses_body, start_mock_and_gateway

SECONDS = float(os.environ.get("BENCH_STALLS_SECONDS", "20"))


def _quantiles(values: list[float]) -> dict[str, float | None]:
    ordered = sorted(values)

    def at(p: float) -> float | None:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 3) if ordered else None

    return {"n": len(ordered), "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": at(1.0)}


def _dump(pid: int, out: Path) -> dict[str, Any]:
    out.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    for _ in range(200):
        if out.exists() and out.stat().st_size:
            time.sleep(0.05)
            return dict(json.loads(out.read_text()))
        time.sleep(0.05)
    raise RuntimeError("no stallwatch report")


async def main_async(procs: Processes, tmp: Path) -> dict[str, Any]:
    out = tmp / "stalls.json"
    os.environ["STALLWATCH_OUT"] = str(out)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "bench" / "stallwatch"), os.environ.get("PYTHONPATH")])
    )
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    raw = gateway.request(responses_body(stream=False))
    log("warming up")
    await closed_loop(gateway, raw, 1, 10.0)
    _dump(gateway_proc.pid, out)
    result = await closed_loop(gateway, raw, 1, SECONDS)
    report = _dump(gateway_proc.pid, out)
    answered = int(result["requests"] or 0) or 1
    gcs = {gen: _quantiles(times) for gen, times in report["gc"].items()}
    batches = report["batches"]
    return {
        "load_average": os.getloadavg(),
        "requests": result["requests"],
        "wall_p50_ms": result["p50_ms"],
        "wall_p99_ms": result["p99_ms"],
        "gc_per_1000_requests": {gen: round(q["n"] * 1000 / answered, 1) for gen, q in gcs.items()},
        "gc_cpu": gcs,
        "gc_thresholds": report["gc_thresholds"],
        "gc_frozen": report["gc_frozen"],
        "switch_interval_s": report["switch_interval_s"],
        "history_batches": len(batches),
        "records_per_batch": round(sum(n for n, _ in batches) / len(batches), 1) if batches else None,
        "history_batch_cpu": _quantiles([cpu for _, cpu in batches]),
        "thread_cpu_us_per_request": {
            name: round(cpu * 1e6 / answered, 1) for name, cpu in report["threads_cpu_s"].items() if cpu > 0
        },
    }


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-stalls-") as tmp:
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp))), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
