"""Instructions per model request: a figure that does not move with the machine's load.

``python bench/instructions.py`` starts the mock and ``sublane serve`` the way ``bench/cpu.py``
does, but the gateway runs under valgrind's callgrind (Debian's ``valgrind`` package; never a
project dependency) with instrumentation off. After a warm-up it counts, for
``BENCH_INSTR_SECONDS`` (default 20) of closed-loop non-streaming Responses calls at concurrency 4,
every instruction the gateway process executes in user space (all threads: the event loop, the
history writer, the quota writer) and divides by the calls answered. Kernel time is not counted.

Under valgrind the gateway runs ~50× slower, so time-driven work (the history writer's batch every
100 ms, quota rewrites) is spread over fewer calls than at full speed: compare two versions with
this script, not with ``bench/cpu.py``'s figures. Repeats agree within about 2 %; ``cpu.py``'s
sittings differ by up to a third (issue #19, BENCHMARKS.md). ``BENCH_INSTR_OUT`` keeps the callgrind
file for ``callgrind_annotate``.

``BENCH_INSTR_THREADS=1`` counts each thread apart (callgrind's ``--separate-threads=yes``) and adds
``loop_instructions_per_request``: the event loop thread's alone, which the history writer's batching
does not move with the number of calls the machine let through (issue #49).
"""

# ruff: noqa: S603, S607  (starts our own processes and valgrind's tools with fixed arguments)
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import uvloop
from driver import closed_loop
from run import DRIVER_CORE, Processes, log, responses_body, start_mock_and_gateway

SECONDS = float(os.environ.get("BENCH_INSTR_SECONDS", "20"))
THREADS = os.environ.get("BENCH_INSTR_THREADS") == "1"
CONCURRENCY = 4


def _control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True, timeout=120)


def _total(callgrind_out: Path) -> int:
    for line in callgrind_out.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"{callgrind_out}: no totals line")


async def main_async(procs: Processes, tmp: Path, out: Path) -> dict[str, Any]:
    separate = " --separate-threads=yes" if THREADS else ""
    os.environ["BENCH_GATEWAY_PREFIX"] = (
        f"valgrind --tool=callgrind --instr-atstart=no{separate} --callgrind-out-file={out}"
    )
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    raw = gateway.request(responses_body(stream=False))
    log("warming up under callgrind")
    await closed_loop(gateway, raw, CONCURRENCY, 20.0)
    pid = str(gateway_proc.pid)
    _control("-i", "on", pid)
    result = await closed_loop(gateway, raw, CONCURRENCY, SECONDS)
    _control("-i", "off", pid)
    _control("-d", pid)
    answered = int(result["requests"] or 0)
    if THREADS:  # one file per thread of the last dump: <out>.<dump>-<thread>, thread 01 the loop's
        files = sorted(out.parent.glob(out.name + ".*-*"))
        last = files[-1].name.rsplit("-", 1)[0]
        dumps = [path for path in files if path.name.rsplit("-", 1)[0] == last]
        per_thread = {path.name.rsplit("-", 1)[1]: _total(path) for path in dumps}
        instructions = sum(per_thread.values())
        loop = per_thread.get("01", 0)
        return {
            "requests": answered,
            "errors": result["errors"],
            "instructions": instructions,
            "instructions_per_request": round(instructions / answered) if answered else None,
            "loop_instructions_per_request": round(loop / answered) if answered else None,
            "threads": per_thread,
            "callgrind_file": str(dumps[0]),
        }
    dumps = sorted(out.parent.glob(out.name + ".*"))
    instructions = _total(dumps[-1])
    return {
        "requests": answered,
        "errors": result["errors"],
        "instructions": instructions,
        "instructions_per_request": round(instructions / answered) if answered else None,
        "callgrind_file": str(dumps[-1]),
    }


def main() -> None:
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    procs = Processes()
    kept = os.environ.get("BENCH_INSTR_OUT")
    with tempfile.TemporaryDirectory(prefix="sublane-instr-") as tmp:
        out = Path(kept) if kept else Path(tmp) / "callgrind.out"
        try:
            print(json.dumps(uvloop.run(main_async(procs, Path(tmp), out)), indent=2))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
