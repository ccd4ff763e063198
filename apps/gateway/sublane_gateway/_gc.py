"""How ``sublane serve`` keeps the garbage collector from stopping the event loop (issue #19).

Every collection stops the event loop for as long as it walks: a full collection of a built
gateway took about 100 ms, a full one of a warmed-up gateway 13–30 ms, and with 300 streams open
Python ran one every two or three seconds — a spike in every stream's next chunk each time. Two
measures, both only for the serving process (tests build many apps in one process):

* What the process built before serving lives as long as the process: it is collected once and
  frozen (``gc.freeze``) out of later walks, once when the app is built and again when the
  lifespan startup (runtime, adapters, pools, the first compiled statements) has completed
  (``create_app(when_started=…)``).
* A served call leaves no reference cycles behind (measured with ``gc.DEBUG_SAVEALL``: none per
  call, streaming or not), so what the young generations promote is a stream's objects that were
  still in use and are freed by reference counting soon after, never by the collector. Full
  collections, which such promotions trigger, are made ten times rarer (the third threshold 10 →
  :data:`FULL_COLLECTION_THRESHOLD`). Cycles made elsewhere (errors, management) are still
  collected, later.
* For the same reason the young generation is collected every :data:`YOUNG_COLLECTION_THRESHOLD`
  net allocations instead of Python's 700 (issue #49): a burst of 500 streams started together
  leaves some 75,000 objects alive for the streams' length, which at 700 cost about 70 young and 6
  middle collections, 22–27 ms of the event loop's CPU, nearly all of it while the burst starts —
  where every millisecond is some stream's wait for its first token. At 5,000: 9–14 young
  collections and one middle, 11–13 ms (measured in CPU time, ``bench/stallwatch``). A young
  collection then takes up to about 1 ms instead of 0.15 ms; between bursts one comes every few
  thousand calls. A cycle is still found by the first young collection after it is dropped.
* While a burst of calls waits for its starts, no collection at all (:class:`CollectorPausedInBursts`).
"""

from __future__ import annotations

import asyncio
import gc
from typing import Protocol

FULL_COLLECTION_THRESHOLD = 100
YOUNG_COLLECTION_THRESHOLD = 5_000
MAX_PAUSE_S = 2.0  # the longest a burst keeps the collector off (CollectorPausedInBursts)
QUIET_S = 0.05  # how long no call queued for its start ends a burst's pause


def freeze_startup_objects() -> int:
    """Collect once, then freeze what is left; the number of frozen objects."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def rarer_collections() -> tuple[int, int, int]:
    """Raise the first and third collection thresholds (see the module's docstring); the
    thresholds now."""
    _young, middle, _old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, FULL_COLLECTION_THRESHOLD)
    return gc.get_threshold()


class BurstObserver(Protocol):
    """Told by the start pacer when calls begin to queue for their starts and when none is left."""

    def burst_began(self) -> None: ...

    def burst_ended(self) -> None: ...


class CollectorPausedInBursts:
    """The cyclic collector is off while a burst of calls waits for its starts (issue #49).

    A served call leaves no reference cycles (above), so a collection while a burst starts finds
    nothing to free: it only walks the objects of the streams being started, and every millisecond
    it walks is some queued stream's wait for its first token. Measured on 500 paced streams
    started together (``bench/streams.py``; collections counted with ``gc.callbacks``): 13–14 young
    collections and one or two middle ones, 25–45 ms of the event loop, most of it before the
    burst's median stream had begun. Paused, they are one collection once the burst has begun
    every call and no call has queued for :data:`QUIET_S` (a burst's calls arrive over a few
    hundred milliseconds and the queue empties now and then: resuming at each of those moments
    spent the same time in the collector). A burst that goes on for :data:`MAX_PAUSE_S` (the
    gateway saturated for that long) resumes collecting, so a cycle made meanwhile is never held
    for longer. Only the serving process pauses (``sublane serve``, its workers): tests build many
    apps in one process. A collector that something else turned off stays off."""

    __slots__ = ("_limit", "_loop", "_paused", "_quiet", "max_pause_s", "quiet_s")

    def __init__(self, max_pause_s: float = MAX_PAUSE_S, quiet_s: float = QUIET_S) -> None:
        self.max_pause_s = max_pause_s
        self.quiet_s = quiet_s
        self._paused = False
        self._limit: asyncio.TimerHandle | None = None  # ends the pause after max_pause_s
        self._quiet: asyncio.TimerHandle | None = None  # ends it after quiet_s without a queue
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop both timers run on

    @property
    def paused(self) -> bool:
        return self._paused

    def burst_began(self) -> None:
        loop = self._timers_on_running_loop()
        if self._quiet is not None:  # queued again within the quiet time: still the same burst
            self._quiet.cancel()
            self._quiet = None
        if self._paused or not gc.isenabled():
            return
        gc.disable()
        self._paused = True
        self._limit = loop.call_later(self.max_pause_s, self._resume)
        self._loop = loop

    def burst_ended(self) -> None:
        loop = self._timers_on_running_loop()
        if self._paused and self._quiet is None:
            self._quiet = loop.call_later(self.quiet_s, self._resume)

    def _timers_on_running_loop(self) -> asyncio.AbstractEventLoop:
        """The running loop; a pause begun on a loop that has ended since (a test's) is bounded
        again on this one, whose timers will fire."""
        loop = asyncio.get_running_loop()
        if self._paused and self._loop is not loop:
            for timer in (self._limit, self._quiet):
                if timer is not None:
                    timer.cancel()
            self._quiet = None
            self._limit = loop.call_later(self.max_pause_s, self._resume)
            self._loop = loop
        return loop

    def _resume(self) -> None:
        for timer in (self._limit, self._quiet):
            if timer is not None:
                timer.cancel()
        self._limit = self._quiet = None
        if self._paused:
            self._paused = False
            gc.enable()
