"""This replica's link to the others through Redis (SCALE-2, SCALE-3, SCALE-4).

- **Slots and member limits** are taken in Redis by the scheduler (:class:`SharedSlots`); this
  module renews what the replica holds every TTL/3, so a replica that dies stops renewing and its
  leases, tickets and waiters expire after ``SUBLANE_LEASE_TTL``.
- **Releases** from any replica arrive on one pub/sub channel and ring the local waiters of that
  account, who ask Redis again (the oldest waiter over all replicas gets the slot).
- **Quota reads** run one per account and two at once over all replicas; an observation saved on
  one replica is published and put in the others' books, so they do not read it again.
- **Credential refreshes** take a per-account lock with a fencing token (:class:`RefreshLocks`).
- **Events** — a management change (accounts, limits, keys, membership, groups), a cooldown begun
  or ended, credentials refreshed — are published with a version number. Each replica applies the
  others' events as it applies its own signals. A replica that misses one (its subscription dropped)
  sees the gap — in the next event's version, or in the version it polls every half second — and
  reloads everything it caches, so a change reaches every replica within a second either way.
- **Redis out of reach**: new model requests fail with ``coordination_unavailable`` (the shared
  limits raise it), running calls finish (their releases are dropped and expire), ``/readyz`` says
  so, and everything resumes by itself: the subscription and the poll reconnect on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis

from sublane_core import SubLaneError, signals
from sublane_gateway.pipeline._background import BackgroundTasks
from sublane_gateway.pipeline._cache_turns import PreviousTurn, turn_event
from sublane_quota import QuotaObserver, QuotaReader, QuotaReadSkipped
from sublane_scheduler import AffinityStore, Cooldown, CooldownBook, SharedSlots
from sublane_scheduler.shared import RefreshLocks, SharedLimits

_log = logging.getLogger("sublane.coordination")

#: How often the event version is compared (a missed event is noticed within twice this).
POLL_S = 0.5
RECONNECT_S = 0.5
#: Events that are not urgent wait this long for others to go out with (a busy replica's budget
#: usage is one event per call: a message per call would cost more than the call's own Redis work).
EVENT_BATCH_S = 0.05
#: Connections to Redis per replica (commands are short: a few serve thousands of requests a second).
REDIS_CONNECTIONS = 32

Event = dict[str, Any]
Quota = tuple[str | None, tuple[signals.QuotaWindow, ...]]


#: How a cooldown begun or ended is stored (``CooldownStore.save``): cooldown or ``None``, account,
#: model, revision.
SaveCooldown = Callable[[Cooldown | None, int, str, int], None]


def cooldown_of(event: Event) -> tuple[Cooldown | None, int, str, int]:
    """What a ``cooldown`` event carries: the cooldown (``None``: it ended), account, model, revision."""
    account_id, model, until = int(event["account_id"]), str(event["model"]), event.get("until")
    cooldown = (
        None
        if until is None
        else Cooldown(account_id, model, float(until), str(event["reason"]), int(event["streak"]))
    )
    return cooldown, account_id, model, int(event["revision"])


def quota_observation(event: Event) -> signals.QuotaObserved:
    """The observation a ``quota`` event carries."""
    return signals.QuotaObserved(
        account_id=int(event["account_id"]),
        lifecycle_revision=int(event["lifecycle_revision"]),
        observed_at=float(event["observed_at"]),
        plan=event.get("plan"),
        windows=tuple(signals.QuotaWindow(**window) for window in event["windows"]),
    )


class Coordination:
    """Renewal, the release and event subscription, and publishing, for one replica."""

    def __init__(self, redis_url: str, *, ttl_s: float, namespace: str = "sublane") -> None:
        self.replica = secrets.token_hex(6)
        # A blocking pool: under a burst, commands wait (up to 5 s) for one of the pool's connections
        # rather than failing — redis-py's plain pool raises once its limit is reached.
        pool = BlockingConnectionPool.from_url(
            redis_url,
            max_connections=REDIS_CONNECTIONS,
            timeout=5.0,
            socket_connect_timeout=2.0,
            socket_timeout=5.0,
            health_check_interval=10,
        )
        self.redis = Redis.from_pool(pool)  # the client owns the pool: closing it closes the connections
        self.limits = SharedLimits(self.redis, namespace=namespace, ttl_s=ttl_s)
        self.slots = SharedSlots(self.limits, self.replica)
        self.refresh_locks = RefreshLocks(self.limits)  # CRED-1 across replicas, fenced
        self.reachable = True
        self._heard = 0  # the version of the last event applied (or reloaded past)
        self._suspect: int | None = None
        self._tasks = BackgroundTasks()  # the subscription and the tick
        self._outgoing: list[Event] = []
        self._sender: asyncio.Task[None] | None = None
        self._hurry = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_released: Callable[[int], None] = lambda _account_id: None
        self.on_event: Callable[[Event], None] = lambda _event: None
        self.on_resync: Callable[[], None] = lambda: None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        with contextlib.suppress(SubLaneError):  # Redis down at start: the poll notices it comes back
            self._heard = await self.limits.version()
        self._tasks.start(self._listen, name="sublane-coordination-listen")
        self._tasks.start(self._tick, name="sublane-coordination-tick")

    # -- publishing --------------------------------------------------------------------------------

    def publish(self, kind: str, *, urgent: bool = True, **data: Any) -> None:
        """Tell the other replicas (from any thread; sent in the background, never fails a caller).

        Events are sent in order by one sender, all those raised meanwhile in one message. An urgent
        event (a cooldown, a change) goes out on the next loop turn; others (a member's usage) wait
        up to ``EVENT_BATCH_S`` for company, so a busy replica does not publish once per call."""
        event = {"kind": kind, **data}
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._queue(event, urgent)
        else:
            loop.call_soon_threadsafe(self._queue, event, urgent)

    def _queue(self, event: Event, urgent: bool) -> None:
        self._outgoing.append(event)
        if urgent:
            self._hurry.set()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while self._outgoing:
            if not self._hurry.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(EVENT_BATCH_S):
                        await self._hurry.wait()
            await asyncio.sleep(0)  # what this loop turn raises goes in the same message
            self._hurry.clear()
            events, self._outgoing = self._outgoing, []
            message = json.dumps({"replica": self.replica, "events": events}, separators=(",", ":"))
            try:
                await self.limits.publish(message)
            except SubLaneError:
                self.reachable = False  # the others reload everything once they hear from Redis again
                _log.warning(
                    "could not tell the other replicas of %d change(s): Redis is out of reach", len(events)
                )

    # -- hearing -----------------------------------------------------------------------------------

    async def _listen(self) -> None:
        while True:
            try:
                async for channel, data in self.limits.listen():
                    self.reachable = True
                    if channel == self.limits.releases_channel:
                        self.on_released(int(data))
                    else:
                        self._heard_event(data)
            except SubLaneError:
                self.reachable = False
            except Exception:  # a bad message must never stop this replica from hearing the next
                _log.exception("the coordination subscription failed; subscribing again")
            await asyncio.sleep(RECONNECT_S)
            self._resync()  # events may have been missed while the subscription was down

    def _heard_event(self, data: str) -> None:
        version_text, _, body = data.partition(" ")
        version = int(version_text)
        if version > self._heard + 1:
            self._resync()  # a gap: something was missed
        self._heard = max(self._heard, version)
        message = json.loads(body)
        if message.get("replica") != self.replica:
            for event in message["events"]:
                self.on_event(event)

    def _resync(self) -> None:
        self._suspect = None
        self.on_resync()

    async def _tick(self) -> None:
        """Renew what this replica holds (every TTL/3) and compare the event version (every 0.5 s)."""
        loop = asyncio.get_running_loop()
        renew_at = loop.time()
        while True:
            try:
                if loop.time() >= renew_at:
                    renew_at = loop.time() + self.slots.renew_every_s
                    await self.slots.renew()
                version = await self.limits.version()
                if not self.reachable:
                    self.reachable = True
                    self._heard = max(self._heard, version)
                    self._resync()
                elif version > self._heard:
                    if self._suspect is not None and version >= self._suspect:
                        self._heard = version  # still unheard after a poll: missed, reload
                        self._resync()
                    else:
                        self._suspect = version
                else:
                    self._suspect = None
            except SubLaneError:
                self.reachable = False
            except Exception:
                _log.exception("the coordination tick failed")
            await asyncio.sleep(POLL_S)

    # -- what this replica tells the others --------------------------------------------------------------

    def saving_cooldowns(self, save: SaveCooldown) -> SaveCooldown:
        """``save``, then the cooldown published (the book's ``persist``)."""

        def persist(cooldown: Cooldown | None, account_id: int, model: str, revision: int) -> None:
            save(cooldown, account_id, model, revision)
            self.publish(
                "cooldown",
                account_id=account_id,
                model=model,
                revision=revision,
                until=None if cooldown is None else cooldown.until,
                reason=None if cooldown is None else cooldown.reason,
                streak=None if cooldown is None else cooldown.streak,
            )

        return persist

    def share(self, cooldowns: CooldownBook, affinity: AffinityStore, quota: QuotaObserver | None) -> None:
        """Publish what else of this replica's state the others must know: MCOOL-2's failures and
        clears, bindings made, moved or released, quota observations saved."""
        cooldowns.on_failure = lambda account_id, model, at: self.publish(
            "failure", account_id=account_id, model=model, at=at
        )
        cooldowns.on_cleared = lambda account_id, model: self.publish(
            "failures_cleared", account_id=account_id, model=model
        )
        affinity.on_changed = lambda digest: self.publish("binding", digest=digest)
        if quota is not None:
            quota.on_saved = self.publish_quota

    def publish_cache_turn(self, key: bytes, turn: PreviousTurn) -> None:
        """COST-4: a conversation's turn served here; the others judge its next turn against it
        (not urgent: batched with what else this loop turn raises)."""
        self.publish("cache_turn", urgent=False, **turn_event(key, turn))

    # -- quota reads ---------------------------------------------------------------------------------

    def shared_reads(self, read: QuotaReader, *, most: int, life_s: float) -> QuotaReader:
        """``read`` within the replicas' bounds (QUOTA-1 across replicas): one read per account at a
        time and ``most`` at once over all of them; a read that does not fit is skipped (the other
        replica's observation arrives as an event)."""

        async def read_shared(account_id: int, provider: str) -> Quota:
            read_id = self.slots.new_id()
            if await self.limits.begin_quota_read(account_id, read_id, most=most, life_s=life_s) != 1:
                raise QuotaReadSkipped
            try:
                return await read(account_id, provider)
            finally:
                with contextlib.suppress(SubLaneError):  # out of reach: the marker ends with its life
                    await self.limits.end_quota_read(account_id, read_id)

        return read_shared

    def publish_quota(self, observation: signals.QuotaObserved) -> None:
        """An observation saved here: the others put it in their books (no read of their own)."""
        self.publish(
            "quota",
            account_id=observation.account_id,
            lifecycle_revision=observation.lifecycle_revision,
            observed_at=observation.observed_at,
            plan=observation.plan,
            windows=[dataclasses.asdict(window) for window in observation.windows],
        )

    async def ready(self) -> bool:
        """``/readyz``: Redis answers now (SCALE-4)."""
        try:
            async with asyncio.timeout(2.0):
                return await self.limits.ping()
        except TimeoutError:
            return False

    async def close(self) -> None:
        # Cancel scopes, which cancel again until the loops end: on Python 3.11 redis-py can lose a
        # cancellation that arrives as a command completes.
        await self._tasks.close()
        await self.slots.drain()
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)
        await self.limits.aclose()
        await self.redis.aclose()
