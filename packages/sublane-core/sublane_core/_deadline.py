"""A deadline that moves on far more often than it fires, on one event-loop timer.

A connection's timeouts (an upstream's read timeout, a bounded read, keep-alive, a client's header
time) are set again on every call or chunk and almost never reached. Making and cancelling a timer
each time costs 3–4 µs on uvloop (issue #19, BENCHMARKS.md); a :class:`MovingDeadline` keeps one
timer armed and, when it fires before the deadline it now holds (the deadline moved on), arms
itself again for that one. Moving the deadline later is an attribute store; earlier, or after the
timer went off, arms a timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

#: A timer may fire this much before its time (event loops keep their clock in milliseconds).
TIMER_SLACK_S: Final = 0.001


class MovingDeadline:
    """Calls ``expired`` once the loop's clock passes :attr:`at` (``None``: no deadline).

    ``expired`` runs at most once per deadline reached, then :attr:`at` is ``None`` until set
    again. Set :attr:`at` directly to move a pending deadline later; :meth:`set` for any deadline.
    """

    __slots__ = ("_armed_for", "_expired", "_handle", "_loop", "at")

    def __init__(self, loop: asyncio.AbstractEventLoop, expired: Callable[[], None]) -> None:
        self._loop = loop
        self._expired = expired
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for = 0.0
        self.at: float | None = None

    @property
    def armed(self) -> bool:
        """Whether an event-loop timer is pending (for tests: one timer serves many deadlines)."""
        return self._handle is not None

    def set(self, at: float | None) -> None:
        """Expire at ``at`` (loop time), or never (``None``; the pending timer then fires idle)."""
        self.at = at
        if at is None:
            return
        handle = self._handle
        if handle is None or self._armed_for > at:  # none pending, or pending for too late
            if handle is not None:
                handle.cancel()
            self._arm(at)

    def set_in(self, seconds: float) -> None:
        """Expire ``seconds`` from now."""
        self.set(self._loop.time() + seconds)

    def close(self) -> None:
        """For good (the connection closed): no deadline, no pending timer, and the callback let
        go — it is usually the owner's method, and owner → deadline → callback → owner would be a
        reference cycle left to the garbage collector (``tests/test_no_cycles.py``)."""
        self.at = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._expired = _nothing

    def _arm(self, at: float) -> None:
        self._armed_for = at
        self._handle = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._handle = None
        at = self.at
        if at is None:
            return
        if self._loop.time() + TIMER_SLACK_S < at:  # it moved on since this timer was armed
            self._arm(at)
            return
        self.at = None
        self._expired()


def _nothing() -> None:
    pass
