"""A replica's side of the shared limits (SCALE-2, SCALE-3): ids for its leases and member tickets,
their renewal while they are held, and their release — batched, so what ends together (a call's
slot and its member ticket) goes back in one round trip.

The scheduler takes slots through Redis (:class:`SharedLimits`) and mirrors each in its own
:class:`LeaseTable`, so the pipeline's lease handling and the runtime views stay as they are. A
release is synchronous for the pipeline (a lease is released from ``finally`` blocks and
callbacks): the slot is queued here and sent on the next loop turn, and waiters here are told once
Redis has it back. A release that cannot reach Redis is not retried: the lease is no longer
renewed, so it expires after the TTL (SCALE-3), as a dead replica's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from sublane_core import SubLaneError
from sublane_scheduler._admission import Ticket
from sublane_scheduler._leases import Lease

if TYPE_CHECKING:  # redis is an optional extra: only a replica with SUBLANE_REDIS_URL loads it
    from sublane_scheduler._shared import SharedLimits

_log = logging.getLogger("sublane.scheduler")

#: The longest a release waits for the calls' records (``before_release``).
RECORDS_WAIT_S = 5.0
#: How long a member at their concurrency limit is looked at again before ``member_busy``: a place
#: given back on another replica reaches Redis a round trip after that replica's answer.
MEMBER_GRACE_S = 0.05


class Admitting:
    """A member's admission not yet asked of Redis: it goes with the request's first slot, in the
    same script call (one round trip per request, issue #49)."""

    __slots__ = ("member_limit", "rpm", "sent", "ticket", "ticket_id", "user_id")

    def __init__(self, ticket: Ticket, user_id: int, ticket_id: str, member_limit: int, rpm: int) -> None:
        self.ticket = ticket
        self.user_id = user_id
        self.ticket_id = ticket_id
        self.member_limit = member_limit
        self.rpm = rpm
        #: Asked of Redis (alone or with a slot): its answer decided, or a cancellation lost it.
        self.sent = False


class SharedSlots:
    """Leases and member tickets this replica holds in Redis."""

    def __init__(self, limits: SharedLimits, replica: str) -> None:
        self.limits = limits
        self.replica = replica
        self._ids = itertools.count(1)
        self._leases: dict[Lease, tuple[int, str, str]] = {}  # lease → (account, lease id, model)
        self._tickets: dict[str, int] = {}  # ticket id → user
        self._ending_leases: list[tuple[int, str, str]] = []
        self._ending_tickets: list[tuple[int, str]] = []
        self._flush: asyncio.Task[None] | None = None
        self._leaves: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: The loop the slots were taken on: a release may come from code outside it (a test's
        #: synchronous step, a callback); its round trip runs there all the same.
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Told the accounts whose slots went back (the scheduler offers them to its waiters).
        self.on_released: Callable[[int], None] = lambda _account_id: None
        #: Awaited before slots go back: the gateway waits for the calls' records to be written, so
        #: a replica that dies has written every call whose slot it gave back (SCALE-3).
        self.before_release: Callable[[], Awaitable[None]] | None = None

    def new_id(self) -> str:
        """An id unique across replicas for a lease, a waiter or a ticket."""
        return f"{self.replica}:{next(self._ids)}"

    @property
    def renew_every_s(self) -> float:
        return self.limits.ttl_ms / 3000

    def held(self, lease: Lease, lease_id: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._leases[lease] = (lease.account_id, lease_id, lease.model)

    def given_back(self, lease: Lease) -> None:
        """The local lease was released (once): its shared slot goes back."""
        entry = self._leases.pop(lease, None)
        if entry is not None:
            self._ending_leases.append(entry)
            self._schedule()

    async def admit(
        self, user_id: int, member_limit: int, rpm: int, ticket_id: str | None = None
    ) -> Callable[[], None]:
        """Count the member's request across replicas; the callable gives its place back (once)."""
        loop = self._loop = asyncio.get_running_loop()
        ticket_id = ticket_id or self.new_id()
        give_up_at = loop.time() + MEMBER_GRACE_S
        while True:
            try:
                await self.limits.admit(user_id, ticket_id, member_limit, rpm)
                break
            except asyncio.CancelledError:  # counted in Redis, perhaps, with the answer lost
                self.drop_ticket(user_id, ticket_id, member_limit)
                raise
            except SubLaneError as error:
                # The member's previous call may be giving its place back on another replica at
                # this moment (its client already has the answer): look again for a moment before
                # refusing. The limit itself is never exceeded.
                if error.code != "member_busy" or loop.time() >= give_up_at:
                    raise
            await asyncio.sleep(MEMBER_GRACE_S / 5)
        return self.admitted(user_id, ticket_id, member_limit)

    def admitted(self, user_id: int, ticket_id: str, member_limit: int) -> Callable[[], None]:
        """Redis counted ``ticket_id``: the callable gives the member's place back (once)."""
        self._loop = asyncio.get_running_loop()
        if not member_limit:  # only RPM was counted: nothing is held
            return lambda: None
        self._tickets[ticket_id] = user_id

        def leave() -> None:
            if self._tickets.pop(ticket_id, None) is not None:
                self._ending_tickets.append((user_id, ticket_id))
                self._schedule_leaves()

        return leave

    def drop_ticket(self, user_id: int, ticket_id: str, member_limit: int) -> None:
        """An admission cancelled before Redis answered may have been counted there: its place goes
        back in the background (leaving a ticket that is not held does nothing)."""
        if member_limit:
            self._spawn(self.limits.finish([], [(user_id, ticket_id)]))

    async def admit_pending(self, admitting: Admitting) -> None:
        """Ask Redis for ``admitting`` alone (no slot to ask for with it)."""
        admitting.sent = True
        admitting.ticket.then = await self.admit(
            admitting.user_id, admitting.member_limit, admitting.rpm, admitting.ticket_id
        )

    def abandon(self, account_ids: Sequence[int], lease_id: str, model: str) -> None:
        """A take cancelled before Redis answered may have been made there all the same: the id goes
        back on every account it could be on, in the background (giving back an id that is not
        held does nothing), rather than holding a slot until its TTL."""
        self._spawn(self.limits.finish([(account_id, lease_id, model) for account_id in account_ids], []))

    def leave_queue(self, account_ids: list[int], waiter_id: str) -> None:
        """A waiter stopped waiting: out of the shared queues (in the background)."""
        self._spawn(self.limits.leave_queue(account_ids, waiter_id))

    def _schedule(self) -> None:
        if (self._flush is None or self._flush.done()) and self._loop is not None:
            self._flush = self._loop.create_task(self._send_releases())

    def _schedule_leaves(self) -> None:
        if (self._leaves is None or self._leaves.done()) and self._loop is not None:
            self._leaves = self._loop.create_task(self._send_leaves())

    async def _send_releases(self) -> None:
        await asyncio.sleep(0)  # what ends in this loop turn goes back together
        while self._ending_leases:
            leases, self._ending_leases = self._ending_leases, []  # (their records are queued)
            before_release = self.before_release
            if before_release is not None:
                try:
                    async with asyncio.timeout(RECORDS_WAIT_S):
                        await before_release()
                except TimeoutError:  # a stuck history writer must not hold every slot
                    _log.warning(
                        "call records not written after %.0f s; giving the slots back anyway", RECORDS_WAIT_S
                    )
            await self._finish(leases, [])

    async def _send_leaves(self) -> None:
        """A member's place goes back at once, never behind the records a slot waits for: their
        next call must find it free (the lean link sends it with whatever else this turn sends)."""
        await asyncio.sleep(0)
        while self._ending_tickets:
            tickets, self._ending_tickets = self._ending_tickets, []
            await self._finish([], tickets)

    async def _finish(self, leases: list[tuple[int, str, str]], tickets: list[tuple[int, str]]) -> None:
        try:
            await self.limits.finish(leases, tickets)
        except SubLaneError:
            _log.warning("could not give %d slot(s) back to Redis; they expire by themselves", len(leases))
            return
        for account_id in dict.fromkeys(account for account, _, _ in leases):
            self.on_released(account_id)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        async def run() -> None:
            with contextlib.suppress(SubLaneError):  # Redis out of reach: the entry expires by itself
                await work

        self._loop = asyncio.get_running_loop()
        task = self._loop.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def renew(self) -> None:
        """Move every held lease's and ticket's expiry on (call every :attr:`renew_every_s`)."""
        await self.limits.renew_many(list(self._leases.values()), [(u, t) for t, u in self._tickets.items()])

    @property
    def holding(self) -> int:
        return len(self._leases)

    @property
    def pending(self) -> int:
        """Releases and leaves not yet answered by Redis (and background queue leaves)."""
        sending = sum(1 for task in (self._flush, self._leaves) if task is not None and not task.done())
        return len(self._ending_leases) + len(self._ending_tickets) + sending + len(self._tasks)

    async def drain(self) -> None:
        """Send what is queued (at shutdown)."""
        pending = [*self._tasks, *(task for task in (self._flush, self._leaves) if task is not None)]
        await asyncio.gather(*pending, return_exceptions=True)
