"""Time as a dependency: every component takes a :class:`Clock` so rules on time are tested exactly."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time for durations and deadlines, wall time for stored timestamps."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin; never goes backwards."""
        ...

    def time(self) -> float:
        """Unix seconds (wall clock)."""
        ...


class SystemClock:
    """The real clock: its readings are the ``time`` module's own functions, so that reading it is
    one C call and no Python frame (a model call reads it some thirty times, issue #49)."""

    monotonic = staticmethod(time.monotonic)
    time = staticmethod(time.time)


class FakeClock:
    """A clock that moves only when told to. Both readings advance together."""

    def __init__(self, wall: float = 1_800_000_000.0, monotonic: float = 1_000.0) -> None:
        self._wall = wall
        self._monotonic = monotonic

    def monotonic(self) -> float:
        return self._monotonic

    def time(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        """Move both readings forward by ``seconds`` (which must not be negative)."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._wall += seconds
        self._monotonic += seconds


class ShiftedClock:
    """The real clock moved forward on demand: time flows, and tests can jump ahead.

    For tests that run real servers (timeouts must really elapse) yet need to reach an expiry hours
    away. Both readings jump together.
    """

    def __init__(self) -> None:
        self._offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self._offset

    def time(self) -> float:
        return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        """Jump ``seconds`` ahead (never back)."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._offset += seconds
