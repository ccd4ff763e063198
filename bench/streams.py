"""Paced streams started together, and what each relayed chunk costs the gateway (issue #31).

``python bench/streams.py`` starts the mock and ``sublane serve`` the way ``bench/cpu.py`` does
(gateway on core 0, mock and driver on core 1). For each level of ``BENCH_STREAMS_LEVELS``
(default ``100,500,1000``) it starts that many streams together — ``BENCH_STREAMS_CHUNKS`` deltas
(default 250) paced ``BENCH_STREAMS_PACING_MS`` apart (default 20) — first straight to the mock,
then through the gateway, and reports for each side the streams complete, the frames lost, TTFT
p50/p99 and the inter-chunk gap p99, the gateway's additions to them, and the gateway process's CPU
time during its run divided by the chunks it relayed: the relay's cost per pass-through chunk
(per-request work is spread over the chunks of each stream, a few per cent of it at 250).

``BENCH_STREAMS_REPEAT=N`` runs each level N times (direct, then gateway, each time) in the same
processes and adds, per level, every run's added TTFT p50 and their median: a burst's p50 moves by
tens of milliseconds from one run to the next on a 2-core machine, where the mock and the driver
share a core (issue #49), so one run says little.

The warm-up is one burst of ``BENCH_STREAMS_WARMUP`` streams (default: the largest level): each
measured burst meets a warm pool, the first of a level included — before, the first burst of a
larger level opened the connections the smaller ones had not (one per turn of a busy mock) and was
the slow run of its invocation. ``BENCH_MOCK_KEEPALIVE_S=5`` still measures bursts on a cold pool.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import uvloop
from driver import Target
from run import (
    DRIVER_CORE,
    ROOT,
    Processes,
    compare,
    cpu_seconds,
    free_port,
    log,
    mint_codex_credentials,
    paced_level,
    responses_body,
    seed_gateway,
    start_gateway,
    wait_http,
)

LEVELS = [int(level) for level in os.environ.get("BENCH_STREAMS_LEVELS", "100,500,1000").split(",")]
CHUNKS = int(os.environ.get("BENCH_STREAMS_CHUNKS", "250"))
REPEAT = int(os.environ.get("BENCH_STREAMS_REPEAT", "1"))
#: Streams of the warm-up burst: by default the largest level, so that every measured burst meets a
#: pool holding as many upstream connections as it needs (while the mock keeps them: its
#: ``BENCH_MOCK_KEEPALIVE_S``), the first of its level included.
WARMUP = int(os.environ.get("BENCH_STREAMS_WARMUP", str(max(LEVELS))))
PACING_MS = int(os.environ.get("BENCH_STREAMS_PACING_MS", "20"))


async def main_async(procs: Processes, tmp: Path) -> dict[str, Any]:
    mock_port = free_port()
    mock_url = f"http://127.0.0.1:{mock_port}"
    mock_args = ["taskset", "-c", DRIVER_CORE, sys.executable, str(ROOT / "bench" / "mock.py")]
    mock = procs.start([*mock_args, "--port", str(mock_port)], dict(os.environ), tmp / "mock.log")
    wait_http(f"{mock_url}/_mock/stats", mock)
    creds = mint_codex_credentials()
    gateway_proc, gateway_url = start_gateway(procs, tmp, mock_url)
    key, _ = seed_gateway(gateway_url, creds["credentials"])
    direct_auth = {
        "Authorization": f"Bearer {creds['access_token']}",
        "chatgpt-account-id": creds["account_id"],
    }
    direct = Target("direct", "127.0.0.1", mock_port, "/backend-api/codex/responses", direct_auth)
    gateway = Target(
        "gateway",
        "127.0.0.1",
        int(gateway_url.rsplit(":", 1)[1]),
        "/v1/responses",
        {"Authorization": f"Bearer {key}"},
    )
    raw = responses_body(stream=True, deltas=CHUNKS, pacing_ms=PACING_MS)
    await paced_level(gateway, gateway.request(raw), WARMUP, CHUNKS)  # warm-up: pools, caches, code paths
    await asyncio.sleep(1.0)
    out: dict[str, Any] = {"chunks": CHUNKS, "pacing_ms": PACING_MS, "levels": []}
    for level in [level for level in LEVELS for _ in range(REPEAT)]:
        row: dict[str, Any] = {"streams": level}
        row["direct"] = await paced_level(direct, direct.request(raw), level, CHUNKS)
        await asyncio.sleep(1.0)
        before = cpu_seconds(gateway_proc.pid)
        row["gateway"] = await paced_level(gateway, gateway.request(raw), level, CHUNKS)
        spent = cpu_seconds(gateway_proc.pid) - before
        relayed = level * CHUNKS - row["gateway"]["frames_lost"]
        row["gateway"]["cpu_s"] = round(spent, 3)
        row["gateway"]["cpu_us_per_chunk"] = round(spent * 1e6 / relayed, 1) if relayed else None
        row["added_ttft_p50_ms"] = compare(row["direct"]["ttft_p50_ms"], row["gateway"]["ttft_p50_ms"])
        row["added_ttft_p99_ms"] = compare(row["direct"]["ttft_p99_ms"], row["gateway"]["ttft_p99_ms"])
        row["added_gap_p99_ms"] = compare(row["direct"]["gap_p99_ms"], row["gateway"]["gap_p99_ms"])
        out["levels"].append(row)
        g = row["gateway"]
        log(
            f"{level} streams: lost {g['frames_lost']}, complete {g['complete']}, "
            f"TTFT p50 {g['ttft_p50_ms']} ms (+{row['added_ttft_p50_ms']['difference']}), "
            f"gap p99 {g['gap_p99_ms']} ms, "
            f"{g['cpu_us_per_chunk']} µs CPU per chunk"
        )
        await asyncio.sleep(1.0)
    if REPEAT > 1:
        rows = out["levels"]
        out["repeated"] = {
            str(level): _spread([r["added_ttft_p50_ms"]["difference"] for r in rows if r["streams"] == level])
            for level in LEVELS
        }
        log(f"added TTFT p50 by level: {out['repeated']}")
    return out


def _spread(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"runs": values, "median": round(median, 1), "min": ordered[0], "max": ordered[-1]}


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-streams-") as tmp:
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp))), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
