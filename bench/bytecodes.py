"""Bytecodes and Python calls per model request, by module and function: where the Python goes.

``python bench/bytecodes.py`` starts the mock and ``sublane serve`` the way ``bench/cpu.py`` does,
the gateway under ``bench/_bytecode_trace.py``. After a warm-up it counts, on the event loop thread,
every bytecode executed and every function entered or resumed during ``BENCH_BYTECODES_SECONDS``
(default 6) of closed-loop non-streaming Responses calls at concurrency 4 (``BENCH_STREAM=1``:
streaming calls), and prints them per answered request: totals, then the modules and functions
with the most bytecodes (``BENCH_BYTECODES_TOP``, default 40). ``BENCH_BYTECODES_OUT`` keeps the raw
counts as JSON.

Like ``bench/instructions.py`` this is a count, not a time: it repeats whatever else the machine
does, and says which code runs most, which ``cProfile`` (whose per-call overhead inflates small
functions many times over) cannot. Work in C — parsing, JSON, system calls, allocation — is not
in it: ``bench/instructions.py`` counts that.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import uvloop
from driver import closed_loop
from run import DRIVER_CORE, ROOT, Processes, log, responses_body, start_mock_and_gateway

SECONDS = float(os.environ.get("BENCH_BYTECODES_SECONDS", "6"))
TOP = int(os.environ.get("BENCH_BYTECODES_TOP", "40"))
STREAM = os.environ.get("BENCH_STREAM") == "1"
CONCURRENCY = 4


def _short(where: str) -> str:
    path, line, name = where.rsplit(":", 2)
    for marker in ("site-packages/", "/packages/", "/apps/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{line} {name}"


def _module(where: str) -> str:
    return _short(where).split(":", 1)[0]


def report(counts: dict[str, dict[str, int]], requests: int) -> str:
    bytecodes, calls = counts["bytecodes"], counts["calls"]
    total = sum(bytecodes.values())
    lines = [
        f"per request ({requests} requests): {total / requests:,.0f} bytecodes, "
        f"{sum(calls.values()) / requests:,.0f} Python functions entered or resumed",
        "",
        "bytecodes  share  calls  module",
    ]
    by_module: collections.Counter[str] = collections.Counter()
    calls_by_module: collections.Counter[str] = collections.Counter()
    for where, count in bytecodes.items():
        by_module[_module(where)] += count
    for where, count in calls.items():
        calls_by_module[_module(where)] += count

    def row(count: int, entered: int, name: str) -> str:
        return f"{count / requests:9,.0f}  {100 * count / total:4.1f}%  {entered / requests:5.1f}  {name}"

    lines += [row(count, calls_by_module[module], module) for module, count in by_module.most_common(TOP)]
    lines += ["", "bytecodes  share  calls  function"]
    top = collections.Counter(bytecodes).most_common(TOP)
    lines += [row(count, calls.get(where, 0), _short(where)) for where, count in top]
    return "\n".join(lines)


async def main_async(procs: Processes, tmp: Path, out: Path) -> int:
    """The requests answered while counting; the counts are in ``out`` once the gateway wrote them."""
    os.environ["BENCH_GATEWAY_PREFIX"] = f"{sys.executable} {ROOT / 'bench' / '_bytecode_trace.py'}"
    os.environ["BENCH_BYTECODES_OUT"] = str(out)
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    raw = gateway.request(responses_body(stream=STREAM))
    log("warming up")
    await closed_loop(gateway, raw, CONCURRENCY, 3.0)
    gateway_proc.send_signal(signal.SIGUSR1)
    await asyncio.sleep(0.2)
    result = await closed_loop(gateway, raw, CONCURRENCY, SECONDS)
    gateway_proc.send_signal(signal.SIGUSR2)
    return int(result["requests"] or 0)


def _written(out: Path) -> dict[str, dict[str, int]]:
    for _ in range(100):  # the gateway writes them between two bytecodes of its event loop
        time.sleep(0.1)
        if out.exists() and out.stat().st_size:
            break
    time.sleep(0.5)
    counts: dict[str, dict[str, int]] = json.loads(out.read_text())
    return counts


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    kept = os.environ.get("BENCH_BYTECODES_OUT")
    with tempfile.TemporaryDirectory(prefix="sublane-bytecodes-") as tmp:
        out = Path(kept) if kept else Path(tmp) / "bytecodes.json"
        out.unlink(missing_ok=True)
        try:
            requests = uvloop.run(main_async(procs, Path(tmp), out))
            counts = _written(out)
        finally:
            procs.stop_all()
    if not requests:
        raise SystemExit("no request was answered while counting")
    print(report(counts, requests))


if __name__ == "__main__":
    main()
