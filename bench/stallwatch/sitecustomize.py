"""What can hold a gateway's event loop, counted in CPU time (not wall time): ``bench/stalls.py``.

Put this folder first on ``PYTHONPATH`` and set ``STALLWATCH_OUT`` (a file); every ``sublane serve``
started then counts, until ``SIGUSR2`` writes them as JSON to that file and starts over:

* each garbage collection, by generation, with the CPU time (``time.thread_time``) of the thread
  that ran it (a collection holds the GIL throughout: the loop waits for all of it);
* each history batch the writer thread wrote (``HistoryRecorder._write_once``, wrapped here), with that
  thread's CPU time for it: the stretch in which it competes with the loop for the GIL (SQLite
  releases the GIL while it steps, so this is an upper bound of the GIL it held);
* the CPU time of every thread, by name, from the kernel's per-thread clocks.

``STALLWATCH_SWITCH_INTERVAL`` sets ``sys.setswitchinterval`` at each ``SIGUSR2`` (an A/B: after
``sublane serve`` set its own at start-up). Other processes (the
mock, the driver) are left alone. Counts and CPU times do not move with the
machine's load the way wall-clock latencies do.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import threading
import time
from typing import Any


def _install(out: str) -> None:
    state: dict[str, Any] = {}

    def reset() -> None:
        state.update(
            gc={0: [], 1: [], 2: []},
            batches=[],
            threads={t.name: _cpu(t) for t in threading.enumerate()},
            since=time.monotonic(),
        )

    def _cpu(thread: threading.Thread) -> float:
        try:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident or 0))
        except (OSError, ValueError):
            return 0.0

    started: dict[int, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        key = threading.get_ident()
        if phase == "start":
            started[key] = time.thread_time()
        elif key in started:
            state["gc"][info["generation"]].append(time.thread_time() - started.pop(key))

    def dump(*_: object) -> None:
        if os.environ.get("STALLWATCH_SWITCH_INTERVAL"):  # an A/B of the GIL's switch interval
            sys.setswitchinterval(float(os.environ["STALLWATCH_SWITCH_INTERVAL"]))
        threads = {t.name: _cpu(t) - state["threads"].get(t.name, 0.0) for t in threading.enumerate()}
        report = {
            "seconds": time.monotonic() - state["since"],
            "gc": {str(g): sorted(v) for g, v in state["gc"].items()},
            "gc_thresholds": gc.get_threshold(),
            "gc_frozen": gc.get_freeze_count(),
            "batches": state["batches"],
            "threads_cpu_s": threads,
            "switch_interval_s": sys.getswitchinterval(),
        }
        with open(out, "w") as handle:
            json.dump(report, handle)
        reset()

    reset()
    gc.callbacks.append(on_gc)
    signal.signal(signal.SIGUSR2, dump)

    from sublane_history import HistoryRecorder

    write_once = HistoryRecorder._write_once

    def timed_write(self: Any, batch: Any, held: Any) -> None:
        began = time.thread_time()
        try:
            write_once(self, batch, held)
        finally:
            state["batches"].append([len(batch), time.thread_time() - began])

    HistoryRecorder._write_once = timed_write  # type: ignore[method-assign]  # measurement only


if os.environ.get("STALLWATCH_OUT") and "serve" in sys.argv and any("sublane" in a for a in sys.argv[:2]):
    _install(os.environ["STALLWATCH_OUT"])
