"""A loop-lag watchdog for the gateways a bench script starts: what held the event loop, and when.

Put this folder first on ``PYTHONPATH`` and set ``LAGWATCH_DIR`` (``LAG_MS``, default 40, is the
lag that counts)::

    PYTHONPATH=bench/lagwatch LAGWATCH_DIR=/tmp/lag BENCH_LITELLM=0 .venv/bin/python bench/run.py

Every ``sublane serve`` started then ticks a 5 ms timer on its event loop; a thread samples the
loop thread's stack every 2 ms while the last tick is more than ``LAG_MS`` old, and when the loop
catches up writes the episode — wall-clock start, longest lag, the most frequent stacks — to
``LAGWATCH_DIR/lag-<pid>.txt``. Other processes (the mock, the driver) are left alone. A stack that
ends in ``runners.py … run`` is the loop inside uvloop's C code: polling, accepting, reading,
writing. The sampling thread takes the GIL to look: measure with it, never time a run under it.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import traceback
from typing import Any


def _watch(path: str, lag_s: float, state: dict[str, float], loop_thread: int) -> None:
    episode: list[float] | None = None
    stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
    while True:
        time.sleep(0.002)
        lag = time.monotonic() - state["last"]
        if lag > lag_s:
            if episode is None:
                episode = [time.time() - lag, lag]
                stacks = collections.Counter()
            episode[1] = max(episode[1], lag)
            frame = sys._current_frames().get(loop_thread)
            if frame is not None:
                summary = traceback.extract_stack(frame)[-7:]
                stacks[tuple(f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}" for f in summary)] += 1
        elif episode is not None:
            began, longest = episode
            started = time.strftime("%H:%M:%S", time.localtime(began)) + f".{int(began * 1000) % 1000:03d}"
            with open(path, "a") as out:
                samples = sum(stacks.values())
                out.write(f"EPISODE start={started} max_lag_ms={longest * 1000:.0f} samples={samples}\n")
                for stack, count in stacks.most_common(6):
                    out.write(f"  {count}x " + " > ".join(stack) + "\n")
            episode = None


def _install(out_dir: str) -> None:
    import uvloop

    state = {"last": time.monotonic()}
    new_event_loop = uvloop.new_event_loop

    def beat(loop: Any) -> None:
        state["last"] = time.monotonic()
        loop.call_later(0.005, beat, loop)

    def watched_loop() -> Any:
        loop = new_event_loop()
        loop.call_soon(beat, loop)
        return loop

    uvloop.new_event_loop = watched_loop  # uvicorn's loop factory looks it up when it starts
    path = os.path.join(out_dir, f"lag-{os.getpid()}.txt")
    lag_s = float(os.environ.get("LAG_MS", "40")) / 1000
    loop_thread = threading.main_thread().ident
    assert loop_thread is not None
    threading.Thread(target=_watch, args=(path, lag_s, state, loop_thread), daemon=True).start()


if os.environ.get("LAGWATCH_DIR") and "serve" in sys.argv and any("sublane" in a for a in sys.argv[:2]):
    _install(os.environ["LAGWATCH_DIR"])
