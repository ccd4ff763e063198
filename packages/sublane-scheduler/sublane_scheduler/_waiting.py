"""Waiting for an account slot without locks or transactions (WAIT).

A waiter is a future registered on the accounts it may use (one for a bound conversation, the
eligible ones for a new selection). When a slot frees or a limit rises, the oldest waiter of that
account gets the slot handed to it directly: the lease is taken on its behalf and set as the
future's result, so no thundering herd races for it (WAIT-3, first come first served per account).
A waiter that times out, is cancelled or is shut down is removed at once and gives back a slot it
was handed in the meantime, exactly once (WAIT-6, ADM-6).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable

from sublane_core import SubLaneError
from sublane_scheduler._leases import Lease


class Waiter:
    """One request waiting for a slot on any of ``accounts``."""

    __slots__ = ("accounts", "bell", "future", "group_id", "model", "request_id", "seq")

    def __init__(
        self, seq: int, group_id: int, accounts: frozenset[int], request_id: str, model: str
    ) -> None:
        self.seq = seq
        self.group_id = group_id
        self.accounts = accounts
        self.request_id = request_id
        self.model = model
        self.future: asyncio.Future[Lease] = asyncio.get_running_loop().create_future()
        #: With shared limits (SCALE-2), rung when a slot of one of its accounts may have freed on
        #: any replica, or when its future ended (reconsider, shutdown): it then asks Redis again.
        self.bell: asyncio.Future[None] | None = None

    def ring(self) -> None:
        bell = self.bell
        if bell is not None and not bell.done():
            bell.set_result(None)


# Takes a lease for a waiter on an account if the account may admit it now, else None.
TryLease = Callable[[int, Waiter], Lease | None]


class Reconsider(Exception):
    """Raised in a waiter whose account began cooling while it waited: decide again (WAIT-9)."""


class WaitRoom:
    """Waiters by account, in arrival order, with a cap per resource group (WAIT-1)."""

    def __init__(self, max_per_group: int) -> None:
        self.max_per_group = max_per_group
        self._seq = itertools.count()
        self._by_account: dict[int, list[Waiter]] = {}
        self._per_group: dict[int, int] = {}
        self._closed = False

    def waiting(self, account_id: int | None = None) -> int:
        """Waiters in all (or of one account)."""
        if account_id is None:
            return sum(self._per_group.values())
        return sum(1 for waiter in self._by_account.get(account_id, ()) if not waiter.future.done())

    def has_waiters(self, account_id: int) -> bool:
        """Whether any request queues for ``account_id`` (one dictionary lookup: most releases
        find nobody waiting)."""
        return account_id in self._by_account

    def waiting_in_group(self, group_id: int) -> int:
        return self._per_group.get(group_id, 0)

    def waiting_by_group(self) -> dict[int, int]:
        """Waiters per resource group that has any (a copy)."""
        return dict(self._per_group)

    def enter(self, group_id: int, accounts: Iterable[int], request_id: str, model: str) -> Waiter:
        """Register a waiter; 429 ``account_queue_full`` when the group's queue is full (WAIT-2)."""
        if self._closed:
            raise SubLaneError("shutting_down")
        if self._per_group.get(group_id, 0) >= self.max_per_group:
            raise SubLaneError("account_queue_full", retry_after=1)
        waiter = Waiter(next(self._seq), group_id, frozenset(accounts), request_id, model)
        for account_id in waiter.accounts:
            self._by_account.setdefault(account_id, []).append(waiter)
        self._per_group[group_id] = self._per_group.get(group_id, 0) + 1
        return waiter

    def leave(self, waiter: Waiter) -> None:
        """Remove a waiter (served, timed out or cancelled). Idempotent."""
        removed = False
        for account_id in waiter.accounts:
            queue = self._by_account.get(account_id)
            if queue and waiter in queue:
                queue.remove(waiter)
                removed = True
                if not queue:
                    del self._by_account[account_id]
        if removed:
            left = self._per_group.get(waiter.group_id, 0) - 1
            if left > 0:
                self._per_group[waiter.group_id] = left
            else:
                self._per_group.pop(waiter.group_id, None)

    def offer(self, account_id: int, try_lease: TryLease) -> int:
        """Hand free slots of ``account_id`` to its oldest waiters; returns how many were served."""
        served = 0
        for waiter in list(self._by_account.get(account_id, ())):
            if waiter.future.done():
                self.leave(waiter)
                continue
            lease = try_lease(account_id, waiter)
            if lease is None:
                break  # no more room on this account
            waiter.future.set_result(lease)
            self.leave(waiter)
            served += 1
        return served

    def nudge(self, account_id: int) -> None:
        """With shared limits: a slot of ``account_id`` may be free (on any replica); its waiters
        ask again, and Redis gives it to the oldest of every replica's waiters (WAIT-3)."""
        for waiter in self._by_account.get(account_id, ()):
            waiter.ring()

    def reconsider(self, account_id: int, blocked: Callable[[Waiter], bool]) -> int:
        """Wake the waiters of ``account_id`` for which ``blocked(waiter)`` holds with :class:`Reconsider`.

        A cooling account is never waited on (WAIT-9): a bound request must hear ``account_cooling``
        now rather than time out, and an unbound one picks another account. Left in the queue, such
        a waiter would also stop :meth:`offer` from reaching the waiters behind it (for instance
        those of another model while one model cools). Returns how many were woken.
        """
        woken = 0
        for waiter in list(self._by_account.get(account_id, ())):
            if not waiter.future.done() and blocked(waiter):
                waiter.future.set_exception(Reconsider())
                waiter.ring()
                self.leave(waiter)
                woken += 1
        return woken

    def close(self) -> None:
        """Shutdown: every waiter fails at once with ``shutting_down`` (WAIT-6)."""
        self._closed = True
        for queue in list(self._by_account.values()):
            for waiter in list(queue):
                if not waiter.future.done():
                    waiter.future.set_exception(SubLaneError("shutting_down"))
                waiter.ring()
                self.leave(waiter)


async def wait_for_lease(room: WaitRoom, waiter: Waiter, timeout_s: float) -> Lease:
    """Wait for a handed-over slot; 429 ``account_wait_timeout`` after ``timeout_s`` (WAIT-2).

    Whatever ends the wait other than a delivered slot (timeout, cancellation), a slot handed over
    at that same moment is given back, so none leaks.

    ``asyncio.timeout`` rather than ``asyncio.wait_for``: on Python 3.11, ``wait_for`` swallows a
    cancellation that arrives once the slot is handed over but before the task resumes, and returns
    the lease to a caller that was cancelled (it then never releases it, or serves a gone client).
    """
    delivered = False
    try:
        async with asyncio.timeout(timeout_s):
            lease = await asyncio.shield(waiter.future)
        delivered = True
        return lease
    except TimeoutError:
        raise SubLaneError("account_wait_timeout", retry_after=1) from None
    finally:
        room.leave(waiter)
        if not delivered:
            future = waiter.future
            if not future.done():
                future.cancel()
            elif not future.cancelled() and future.exception() is None:
                future.result().release("canceled")
