"""How ``sublane serve`` keeps its background threads from holding up the event loop (issue #49).

The serving process has one latency-bound thread, the event loop, and background threads that run
Python in stretches: the history writer (a batch of records every 100 ms: the rows, their costs,
the usage summaries — at 1,000 calls/s some 100 records, milliseconds of Python between SQLite
calls), the quota writer, AnyIO's worker threads. Only one of them runs Python at a time
(the GIL). A request that arrives while the writer is in such a stretch waits until the writer lets
go: in a long stretch only after the interpreter's switch interval, 5 ms by default, when the
waiting thread asks the holder to drop it. That matches the added p99 of 5.6–5.8 ms measured at
concurrency 1 against a p50 of 0.64 ms: one switch interval on top of a usual call (BENCHMARKS.md,
issue #49, with ``bench/stalls.py``'s counts of the writer's stretches).

The serving process asks for the switch sooner (:data:`SWITCH_INTERVAL_S`): the loop then waits at
most about that long for any stretch of another thread. The price is more hand-overs while two
threads both have Python to run — the same work, cut into smaller turns; with the writer idle
between its batches there is nothing to hand over. Tests, which build many apps in one process,
keep the default: this is for ``sublane serve`` and its workers only.

The GIL is one half; the core is the other. Where the loop and a writer share a core, the kernel
favoured the writer when it woke for a batch (it had slept while the loop worked), and a call that
arrived then waited for the writer's time slice: at concurrency 1, most of the slowest percent of
calls overlapped a batch. The serving process's background threads therefore run
:data:`BACKGROUND_NICE_STEPS` ``nice`` steps below it (``sublane_core.background_thread_begins``):
they run when the loop waits, and still get their share when it never does.
"""

from __future__ import annotations

import sys

from sublane_core import lower_background_threads

#: Half a millisecond: a tenth of Python's default, under the time of one call at full speed.
SWITCH_INTERVAL_S = 0.0005

#: A background thread's ``nice`` below the loop's: 10 gives it about a tenth of a core the loop
#: also wants (the kernel's weights), more than the history writer's 5-7 % at full speed.
BACKGROUND_NICE_STEPS = 10


def loop_first_switching() -> float:
    """Set the serving process's switch interval and its background threads' priority (see the
    module's docstring), before they start; the interval now."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    lower_background_threads(BACKGROUND_NICE_STEPS)
    return sys.getswitchinterval()
