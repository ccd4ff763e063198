"""Where the gateway's CPU goes: py-spy samples ``sublane serve`` under two bench loads.

``python bench/profile.py`` (py-spy from ``BENCH_PYSPY``, default ``.cache/bench-prof-venv/bin/py-spy``,
installed there on first use; never a project dependency; ``BENCH_PYSPY_NATIVE=1`` samples C frames
too). Same layout as ``bench/run.py``:
gateway on core 0, mock and driver on core 1. Loads: closed-loop non-streaming Responses at
concurrency 16 on the instant mock, then 300 paced streams (64 deltas every 20 ms). Writes the
collapsed stacks to ``bench/results/profile-<load>.txt`` and prints the functions with the most
samples, by own time and by inclusive time.
"""

# ruff: noqa: S603  (starts our own processes with fixed arguments)
from __future__ import annotations

import collections
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import uvloop
from driver import closed_loop
from run import (
    DRIVER_CORE,
    RESULTS,
    ROOT,
    Processes,
    log,
    paced_level,
    responses_body,
    start_mock_and_gateway,
)

CONCURRENCY = int(os.environ.get("BENCH_PROFILE_CONCURRENCY", "16"))  # of the non-streaming load
PYSPY = Path(os.environ.get("BENCH_PYSPY", ROOT / ".cache" / "bench-prof-venv" / "bin" / "py-spy"))


def ensure_pyspy() -> Path:
    """py-spy in its own virtualenv."""
    if not PYSPY.exists():
        venv = PYSPY.parent.parent
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "py-spy"], check=True, timeout=600)
    return PYSPY


def _samples(collapsed: Path) -> Iterator[tuple[list[str], int]]:
    """The stacks of a py-spy raw file (root first) with their sample counts."""
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if stack:
            yield stack.split(";"), int(count_text)


def summarize(collapsed: Path, top: int = 25) -> str:
    """The frames with the most samples, by own time and by inclusive time."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for frames, count in _samples(collapsed):
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    lines = [f"{total} samples", "", "own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in own.most_common(top)]
    lines += ["", "inclusive time:"]
    lines += [f"  {100 * n / total:5.1f}%  {frame}" for frame, n in inclusive.most_common(top)]
    return "\n".join(lines)


# Where a sample's time goes, by the innermost frame that names a step of a model call (issue #19
# asks for this breakdown). The first rule that matches, walking from the leaf up, wins.
STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("record: history writer thread", ("HistoryRecorder._run",)),
    ("quota: writer thread", ("QuotaObserver._write", "QuotaObserver._write_pending")),
    ("key auth", ("KeyAuthenticator.authenticate",)),
    ("body parse", ("read_json_object",)),
    ("credential read", ("CredentialVault.get",)),
    (
        "scheduling (admission, selection, lease)",
        ("schedule (sublane_gateway/pipeline/_schedule.py", "Scheduler.", "providers_listing", "release"),
    ),
    ("quota: header observation", ("_observe_quota",)),
    ("building the upstream request", ("build_request", "_open.<locals>.build")),
    (
        "upstream client (send, receive)",
        (
            "Http1Pool.",
            "_Connection.",
            "PoolResponse.",
            "UpstreamClients.send",
            "send_with_recovery",
        ),
    ),
    (
        "collect / relay / reply",
        ("collect_stream", "relay_sse", "json_reply", "_relay (", "stream_reply", "relay_json"),
    ),
    (
        "call bookkeeping (finish, signals, record queue)",
        ("ModelCall.", "finish_call", "TypedSignal.send", "HistoryRecorder.record"),
    ),
    (
        "HTTP server and ASGI (uvicorn, Starlette)",
        ("uvicorn/protocols", "starlette/", "fastapi/", "ModelRoutes", "asgi_app", "to_response"),
    ),
)


def breakdown(collapsed: Path) -> str:
    """Samples by step of a model call (``STEPS``); the rest is the event loop and other threads."""
    steps: collections.Counter[str] = collections.Counter()
    total = 0
    for frames, count in _samples(collapsed):
        total += count
        steps[_step(frames)] += count
    lines = ["by step of a model call:"]
    lines += [f"  {100 * n / total:5.1f}%  {step}" for step, n in steps.most_common()]
    return "\n".join(lines)


def _step(frames: list[str]) -> str:
    for frame in reversed(frames):
        for step, markers in STEPS:
            if any(marker in frame for marker in markers):
                return step
    return "event loop, sockets and the rest"


async def profile(pyspy: Path, gateway_pid: int, name: str, load: object, seconds: int) -> None:
    """Sample the gateway while ``load`` (a coroutine) runs."""
    out = RESULTS / f"profile-{name}.txt"
    args = [str(pyspy), "record", "--format", "raw", "--rate", "250", "--duration", str(seconds)]
    args += ["--pid", str(gateway_pid), "--output", str(out), "--nonblocking"]
    if os.environ.get("BENCH_PYSPY_NATIVE"):  # C frames too (uvloop, httptools, the JSON libraries)
        args.append("--native")
    # Started before the load and waited for after it: nothing blocks while the load runs.
    spy = subprocess.Popen(  # noqa: ASYNC220
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        await load  # type: ignore[misc]
    finally:
        spy.wait(timeout=seconds + 30)
    print(f"\n=== {name} ({out})\n{breakdown(out)}\n\n{summarize(out)}", flush=True)


async def main_async(procs: Processes, tmp: Path) -> None:
    """Start mock and gateway, then profile the two loads."""
    pyspy = ensure_pyspy()
    gateway_proc, gateway = start_mock_and_gateway(procs, tmp)
    plain = gateway.request(responses_body(stream=False))
    await closed_loop(gateway, plain, 4, 2.0)  # warm-up
    clients = CONCURRENCY
    log(f"profiling: non-streaming, concurrency {clients}")
    load = closed_loop(gateway, plain, clients, 11.0)
    await profile(pyspy, gateway_proc.pid, f"nonstreaming-c{clients}", load, 10)
    paced = gateway.request(responses_body(stream=True, deltas=64, pacing_ms=20))

    async def streams() -> None:
        for _ in range(5):
            await paced_level(gateway, paced, 300, 64)

    log("profiling: 300 paced streams")
    await profile(pyspy, gateway_proc.pid, "paced-300", streams(), 10)


def main() -> None:
    """Run, always stopping every child (``--summarize FILE``: only summarize a recorded profile)."""
    if sys.argv[1:2] == ["--summarize"]:
        for name in sys.argv[2:]:
            print(f"=== {name}\n{breakdown(Path(name))}\n\n{summarize(Path(name))}")
        return
    os.sched_setaffinity(0, {int(DRIVER_CORE)})
    RESULTS.mkdir(parents=True, exist_ok=True)
    procs = Processes()
    with tempfile.TemporaryDirectory(prefix="sublane-prof-") as tmp:
        try:
            uvloop.run(main_async(procs, Path(tmp)))
        finally:
            procs.stop_all()


if __name__ == "__main__":
    main()
