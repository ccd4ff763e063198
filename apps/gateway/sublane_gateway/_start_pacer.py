"""New model calls begin a few per turn of the event loop, so that a burst of them does not stall
the streams already running (issue #19).

The event loop runs, in each turn, every callback that was ready when the turn began, then polls
the sockets. When hundreds of calls arrive at once, every one of them is ready in the same turn,
and each one's first step — key check, body, scheduling, the upstream request — runs before the
loop next looks at a socket: 300 of them held every running stream's next chunk for 150 ms
(bench S4, a loop-lag watchdog in the serving process). Paced, at most ``per_turn`` calls start in
a turn and the rest wait, first come first served, for the turns after it, with the sockets polled
between: a running stream's chunk waits for a few calls' first steps, not for the whole burst. The
burst as a whole is not slower — the same work, in the same order — and a call that arrives alone
(the usual case) starts at once, without waiting for anything.

A ``burst`` observer is told when calls begin to queue and when the queue is empty again (the
serving process pauses the garbage collector in between, ``_gc.CollectorPausedInBursts``).
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sublane_gateway._gc import BurstObserver


class StartPacer:
    """At most ``per_turn`` starts in one turn of the event loop; the rest wait in arrival order."""

    __slots__ = ("_armed", "_left", "_waiters", "burst", "per_turn")

    def __init__(self, per_turn: int, burst: BurstObserver | None = None) -> None:
        if per_turn < 1:
            raise ValueError("per_turn must be at least 1")
        self.per_turn = per_turn
        self.burst = burst
        self._left = per_turn
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        # The loop whose next turn will reset the budget (``None``: no turn armed). Kept per loop:
        # a loop closed with a turn armed (a test app's) must not leave the next loop unpaced forever.
        self._armed: asyncio.AbstractEventLoop | None = None

    def take(self) -> bool:
        """Start now if this turn has a start left and nobody waits for one (no ``await``)."""
        loop = asyncio.get_running_loop()
        if self._armed is not loop:
            self._arm(loop)
        if self._left and not self._waiters:
            self._left -= 1
            return True
        return False

    async def wait(self) -> None:
        """Wait for a start in a later turn (after :meth:`take` said no)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        if not self._waiters and self.burst is not None:
            self.burst.burst_began()
        self._waiters.append(waiter)
        if self._armed is not loop:
            self._arm(loop)
        try:
            await waiter
        except asyncio.CancelledError:
            if not waiter.done():
                waiter.cancel()  # skipped when its turn comes; a start it was handed is this turn's
            raise

    @property
    def waiting(self) -> int:
        """Calls waiting for a turn (cancelled ones until their turn passes them by)."""
        return len(self._waiters)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._armed is not None and self._armed is not loop:  # the old loop's turn never comes
            queued = bool(self._waiters)
            self._left = self.per_turn
            self._waiters = collections.deque(w for w in self._waiters if w.get_loop() is loop)
            if queued and self.burst is not None:  # the old loop's burst ends; this loop's begins
                self.burst.burst_ended()
                if self._waiters:
                    self.burst.burst_began()
        self._armed = loop
        loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        """A new turn: its starts go to the first waiters; armed again while starts are taken.

        A turn that hands starts to waiters leaves none for calls arriving in it: the waiters
        begin at the next turn, and a newcomer taking a start now would begin before them."""
        released = 0
        waiters = self._waiters
        queued = bool(waiters)
        while waiters and released < self.per_turn:
            waiter = waiters.popleft()
            if not waiter.done():  # a cancelled waiter takes no start
                waiter.set_result(None)
                released += 1
        if queued and not waiters and self.burst is not None:  # the burst's last call began
            self.burst.burst_ended()
        if released or waiters:
            self._left = 0
            asyncio.get_running_loop().call_soon(self._next_turn)
        elif self._left < self.per_turn:  # starts were taken in the turn that just ended
            self._left = self.per_turn
            asyncio.get_running_loop().call_soon(self._next_turn)
        else:
            self._armed = None
