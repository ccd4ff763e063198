"""Concurrency benchmark: N paced Codex SSE streams at once against one simulator process.

The simulator runs as its own process pinned to core 0 (`taskset -c 0`), this client on core 1.
Each stream asks for D text deltas every P ms; the client timestamps every delta as it arrives and
reports the achieved inter-delta gap (p50/p99/max, and "steady" without each stream's first
quarter, which overlaps the connection storm of all streams opening at once) against the target,
the per-stream duration against the ideal, and the CPU the simulator used. Loopback only; bounded
in count and time.

    python bench/concurrency.py --streams 500 --deltas 64 --pacing-ms 20
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from typing import cast

MARKER = b"event: response.output_text.delta"
DONE = b"event: response.completed"


@dataclass
class StreamResult:
    started: float = 0.0
    deltas: list[float] = field(default_factory=list)
    completed: bool = False
    ended: float = 0.0


class _StreamProtocol(asyncio.Protocol):
    def __init__(self, request: bytes, result: StreamResult, done: asyncio.Future[None]) -> None:
        self._request = request
        self._result = result
        self._done = done
        self._tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._result.started = time.monotonic()
        cast(asyncio.WriteTransport, transport).write(self._request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        window = self._tail + data
        self._result.deltas.extend([now] * window.count(MARKER))
        if DONE in window:
            self._result.completed = True
        self._tail = window[-(len(MARKER) - 1) :]

    def connection_lost(self, exc: Exception | None) -> None:
        self._result.ended = time.monotonic()
        if not self._done.done():
            self._done.set_result(None)


def _http(method: str, url: str, body: dict[str, object] | None = None) -> dict[str, object]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    # Only ever the loopback http:// URL of the simulator this script started.
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        result: dict[str, object] = json.loads(response.read())
        return result


def _start_simulator(core: int | None) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "sublane_sim._cli", "--host", "127.0.0.1", "--port", "0"]
    if core is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(core), *command]
    # A fixed argv (this interpreter running the simulator CLI), no shell.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # noqa: S603
    assert process.stdout is not None
    first = process.stdout.readline().strip()
    base = first.rsplit(" ", 1)[-1]
    for line in process.stdout:
        if line.startswith("control API"):
            break
    for _ in range(100):
        try:
            _http("GET", f"{base}/_sim/health")
            break
        except OSError:
            time.sleep(0.05)
    return process, base


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _run_streams(base: str, api_key: str, streams: int, timeout_s: float) -> list[StreamResult]:
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps({"model": "gpt-5-codex", "stream": True, "store": False, "input": "bench"}).encode()
    request = (
        f"POST /backend-api/codex/responses HTTP/1.1\r\nhost: {host}:{port}\r\n"
        f"authorization: Bearer {api_key}\r\ncontent-type: application/json\r\n"
        f"accept: text/event-stream\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    loop = asyncio.get_running_loop()
    results = [StreamResult() for _ in range(streams)]
    finished: list[asyncio.Future[None]] = []
    for result in results:
        done: asyncio.Future[None] = loop.create_future()
        finished.append(done)
        await loop.create_connection(
            functools.partial(_StreamProtocol, request, result, done), host, int(port)
        )
    await asyncio.wait_for(asyncio.gather(*finished), timeout_s)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--deltas", type=int, default=64)
    parser.add_argument("--pacing-ms", type=float, default=20.0)
    parser.add_argument("--sim-core", type=int, default=0, help="core for the simulator (taskset)")
    parser.add_argument("--client-core", type=int, default=1, help="core for this client")
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > args.client_core:
        os.sched_setaffinity(0, {args.client_core})
    process, base = _start_simulator(args.sim_core)
    try:
        account = _http("POST", f"{base}/_sim/accounts", {"provider": "codex"})
        behaviour = {"kind": "ok", "deltas": args.deltas, "pacing_ms": args.pacing_ms}
        _http("PUT", f"{base}/_sim/accounts/{account['id']}/default", behaviour)
        try:
            import uvloop

            runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
        except ImportError:
            runner = asyncio.Runner()
        cpu_before = _cpu_seconds(process.pid)
        wall_start = time.monotonic()
        ideal_s = args.deltas * args.pacing_ms / 1000
        with runner:
            results = runner.run(_run_streams(base, str(account["api_key"]), args.streams, 60 + 4 * ideal_s))
        wall = time.monotonic() - wall_start
        cpu = _cpu_seconds(process.pid) - cpu_before
        counters = _http("GET", f"{base}/_sim/accounts/{account['id']}/counters")
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()

    gaps = [(b - a) * 1000 for r in results for a, b in zip(r.deltas, r.deltas[1:], strict=False)]
    ramp = max(1, int(0.25 * args.deltas))
    steady = [
        (b - a) * 1000 for r in results for a, b in zip(r.deltas[ramp:], r.deltas[ramp + 1 :], strict=False)
    ]
    durations = [(r.deltas[-1] - r.deltas[0]) for r in results if len(r.deltas) > 1]
    complete = sum(r.completed and len(r.deltas) == args.deltas for r in results)
    report = {
        "streams": args.streams,
        "deltas_per_stream": args.deltas,
        "target_gap_ms": args.pacing_ms,
        "complete_streams": complete,
        "gap_p50_ms": round(statistics.median(gaps), 2),
        "gap_p99_ms": round(_percentile(gaps, 0.99), 2),
        "gap_max_ms": round(max(gaps), 2),
        "steady_gap_p50_ms": round(statistics.median(steady), 2),
        "steady_gap_p99_ms": round(_percentile(steady, 0.99), 2),
        "stream_span_ideal_s": round((args.deltas - 1) * args.pacing_ms / 1000, 3),
        "stream_span_p50_s": round(statistics.median(durations), 3),
        "stream_span_max_s": round(max(durations), 3),
        "wall_s": round(wall, 2),
        "events_per_s": round(sum(len(r.deltas) for r in results) / wall),
        "sim_cpu_s": round(cpu, 2),
        "sim_cpu_utilization": round(cpu / wall, 2),
        "sim_peak_streams": counters["peak_streams"],
    }
    print(json.dumps(report, indent=2))
    return 0 if complete == args.streams else 1


if __name__ == "__main__":
    sys.exit(main())
