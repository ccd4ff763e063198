"""Background threads that give the CPU to the event loop first (issue #49).

A gateway's latency is its event loop's; its background threads (the history writer above all, the
quota and cooldown writers, the metered-spend refresher) write in batches and can wait. On a core
shared by both — one core given to the process, or more threads than cores — the kernel's
scheduler favours whichever thread ran least lately, which is the writer: it slept between its
batches while the loop served. A writer that wakes for its batch while the loop serves a call then
keeps the core for its time slice, milliseconds, and the call waits; at concurrency 1 most calls in
the slowest percent overlapped such a batch (BENCHMARKS.md, issue #49, "the tail at concurrency
1, again").

A background thread calls :func:`background_thread_begins` first; where the process asked for it
(:func:`lower_background_threads`, done by ``sublane serve`` and its workers, never by tests that
build apps in one process) the thread lowers its own scheduling priority (a higher ``nice``, on
Linux per thread). The writer then runs when the loop waits, and as often as before when the loop
is saturated (the kernel still gives it its share). Lowering a priority needs no privilege;
elsewhere than Linux ``nice`` is per process, and nothing is changed.
"""

from __future__ import annotations

import os
import sys
import threading

#: ``nice`` steps a background thread takes below the process, once asked (0: none).
_steps = 0


def lower_background_threads(steps: int) -> None:
    """Background threads started from now on run ``steps`` ``nice`` steps below the process."""
    global _steps
    _steps = max(0, steps)


def background_steps() -> int:
    """The ``nice`` steps background threads take (what :func:`lower_background_threads` set)."""
    return _steps


def background_thread_begins() -> None:
    """Called first by a background thread: it lowers its own priority as the process asked."""
    if not _steps or sys.platform != "linux":
        return
    thread = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, now + _steps))
    except OSError:  # a sandbox that refuses it: the thread runs at the process's priority
        return
