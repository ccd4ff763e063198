"""A stateful model of metered accounts in selection (PAID-2, hypothesis ``RuleBasedStateMachine``).

Two subscription accounts (one slot each) and one metered account (two slots) in a group whose
metered routing is drawn per example (``overflow``, ``normal``, ``off``). Requests arrive, finish
and wait; the subscription accounts cool down, run out of quota, back off their refresh, are
disabled or lose their authorization, and recover; the (fake) clock moves, and then every waiter
decides again as its overflow timer would make it. After every step:

- a call served by the metered account was allowed to be: never with ``off``; with ``overflow``
  only when no subscription account could take it (all cooling, out of quota, backing off,
  disabled or unauthorized) or it had waited ``overflow_after_s`` — its routing says
  ``metered: true`` and a reason, and a subscription's says neither;
- a request that was just decided (a new one, or every waiter after the clock moved) does not
  wait while the rules offer it the metered account and that account has a free slot;
- at the end no slot, admission place or waiter is left.

The same model runs with the slots shared through a real Redis (SCALE-2) when redis-server exists.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from redis.asyncio import Redis
from redis_server import REDIS_SERVER, RedisServer
from scheduler_harness import METERED, Workspace
from test_scheduler_stateful import _template

from sublane_core import FakeClock, MeteredRouting, create_db_engine
from sublane_scheduler import (
    Admission,
    AffinityStore,
    CooldownBook,
    CooldownPolicy,
    Grant,
    LeaseTable,
    Scheduler,
    SharedSlots,
    WaitRoom,
)
from sublane_scheduler.shared import SharedLimits

OVERFLOW_AFTER_S = 60.0  # fake seconds; the real timer (as long in real time) never fires here
METERED_LIMIT = 2
_namespaces = itertools.count(1)
_OVERFLOW_REASONS = {"waited", "all_cooling", "all_out_of_quota", "all_refresh_backoff", "all_unavailable"}


async def _nothing() -> None:
    return None


class MeteredModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="sublane-metered-"))
        shutil.copyfile(_template(), self.folder / "sublane.db")
        self.engine = create_db_engine(f"sqlite:///{self.folder / 'sublane.db'}")
        self.clock = FakeClock()
        self.loop = asyncio.new_event_loop()
        self.workspace = Workspace(self.engine, self.clock)
        self.group = self.workspace.group()
        self.subscriptions = [self.workspace.account(self.group, limit=1) for _ in range(2)]
        self.metered = self.workspace.account(self.group, provider=METERED, limit=METERED_LIMIT)
        self.routing = MeteredRouting.OVERFLOW
        self.scheduler = self._scheduler()
        self.scheduler.eligibility = self.workspace.eligibility()
        self.cooling_until: dict[int, float] = {}
        self.disabled: set[int] = set()
        self.tasks: list[asyncio.Task[Grant]] = []
        self.granted: dict[int, Grant] = {}
        self.finished: set[int] = set()
        self.first_wait: dict[int, float] = {}  # task → the clock when it was first seen waiting
        self.fresh: set[int] = set()  # tasks decided in this step

    def _scheduler(self) -> Scheduler:
        return self.workspace.scheduler(wait_timeout_s=10_000, queue=1000)

    # -- driving the loop --------------------------------------------------------------------------

    def _quiet(self) -> None:
        async def turns() -> None:
            deadline = self.loop.time() + 5
            while self.loop.time() < deadline:
                for _ in range(5):
                    await asyncio.sleep(0)
                running = sum(1 for task in self.tasks if not task.done())
                if running == self.scheduler.room.waiting():
                    return
                await asyncio.sleep(0.001)
            raise AssertionError("the scheduler did not settle")

        self.loop.run_until_complete(turns())

    def _settle(self) -> None:
        self._quiet()
        for index, task in enumerate(self.tasks):
            if index in self.granted or index in self.finished:
                continue
            if not task.done():
                self.first_wait.setdefault(index, self.clock.monotonic())
                continue
            if task.cancelled() or task.exception() is not None:
                self.finished.add(index)
                continue
            grant = self.granted[index] = task.result()
            self._check_grant(index, grant)

    def _waiting(self) -> list[int]:
        return [index for index, task in enumerate(self.tasks) if not task.done()]

    # -- what the SPEC says ------------------------------------------------------------------------

    def _unavailable(self, account_id: int) -> bool:
        """The subscription account cannot take a call now, whatever its slots."""
        workspace = self.workspace
        return (
            self.cooling_until.get(account_id, 0.0) > self.clock.time()
            or account_id in workspace.exhausted
            or account_id in workspace.backing_off
            or account_id in self.disabled
            or account_id in workspace.reauth
        )

    def _metered_offered(self, index: int) -> bool:
        if self.routing is MeteredRouting.OFF:
            return False
        if self.routing is MeteredRouting.NORMAL:
            return True
        if all(self._unavailable(account) for account in self.subscriptions):
            return True
        since = self.first_wait.get(index)
        return since is not None and self.clock.monotonic() - since >= OVERFLOW_AFTER_S

    def _check_grant(self, index: int, grant: Grant) -> None:
        routing = grant.routing
        if grant.account.id != self.metered:
            assert "metered" not in routing and "overflow_reason" not in routing, routing
            assert not self._unavailable(grant.account.id)
            return
        assert self._metered_offered(index), (self.routing, routing, self.first_wait.get(index))
        assert routing["metered"] is True
        reason = routing["overflow_reason"]
        if self.routing is MeteredRouting.NORMAL:
            assert reason == "normal"
        else:
            assert reason in _OVERFLOW_REASONS
        if reason == "waited":
            assert self.clock.monotonic() - self.first_wait[index] >= OVERFLOW_AFTER_S

    # -- rules -------------------------------------------------------------------------------------

    @initialize(routing=st.sampled_from(list(MeteredRouting)))
    def choose_routing(self, routing: MeteredRouting) -> None:
        self.routing = routing
        self.loop.run_until_complete(self.workspace.meter(self.group, routing, OVERFLOW_AFTER_S))

    @rule()
    def acquire(self) -> None:
        request = self.workspace.route(self.group)
        self.tasks.append(self.loop.create_task(self.scheduler.route(request, _nothing)))
        self.fresh = {len(self.tasks) - 1}
        self._settle()

    @precondition(lambda self: bool(self.granted))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(sorted(self.granted)))
        self.granted.pop(index).release("completed")
        self.finished.add(index)
        self.fresh = set()
        self._settle()

    @precondition(lambda self: bool(self._waiting()))
    @rule(data=st.data())
    def cancel_waiter(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self._waiting()))
        self.tasks[index].cancel()
        self.fresh = set()
        self._settle()
        self.finished.add(index)

    @rule(data=st.data(), seconds=st.sampled_from([5.0, 90.0]))
    def cool_down(self, data: st.DataObject, seconds: float) -> None:
        account = data.draw(st.sampled_from(self.subscriptions))
        self.scheduler.cooldowns.rate_limited(account, seconds)
        self.cooling_until[account] = self.clock.time() + seconds
        self.scheduler.offer(account)  # as the release of the call that heard the 429 does
        self.fresh = set()
        self._settle()

    @rule(data=st.data(), state=st.sampled_from(["quota", "backoff", "disabled", "unauthorized"]))
    def toggle(self, data: st.DataObject, state: str) -> None:
        """A subscription account goes out of quota, backs off, is disabled or unauthorized — or
        recovers from it."""
        account = data.draw(st.sampled_from(self.subscriptions))
        workspace = self.workspace
        if state == "quota":
            if workspace.exhausted.pop(account, None) is None:
                workspace.exhausted[account] = self.clock.time() + 3600
        elif state == "backoff":
            if workspace.backing_off.pop(account, None) is None:
                workspace.backing_off[account] = self.clock.time() + 3600
        elif state == "disabled":
            self.disabled ^= {account}
            self.loop.run_until_complete(workspace.change(account, enabled=account not in self.disabled))
        else:
            workspace.reauth ^= {account}
        self.fresh = set()
        self._settle()

    @rule(seconds=st.sampled_from([1.0, 30.0, 61.0]))
    def clock_step(self, seconds: float) -> None:
        """Time passes; every waiter decides again, as its overflow timer makes it when its moment
        comes (the fake clock moves, so the timers are played here)."""
        self.clock.advance(seconds)
        for account in [*self.subscriptions, self.metered]:
            self.scheduler.offer(account)  # a cooldown that ended is noticed on the next offer
        self._settle()
        waiting = set(self._waiting())
        for account in [*self.subscriptions, self.metered]:
            self.scheduler.room.reconsider(account, lambda waiter: True)
        self.fresh = waiting
        self._settle()

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def a_decided_request_does_not_wait_while_the_metered_account_is_offered_and_free(self) -> None:
        metered_free = self.scheduler.leases.in_flight(self.metered) < METERED_LIMIT
        for index in self.fresh:
            if index in self.granted or index in self.finished or self.tasks[index].done():
                continue
            assert not (metered_free and self._metered_offered(index)), (self.routing, index)

    @invariant()
    def every_lease_is_counted_once(self) -> None:
        leases = self.scheduler.leases
        assert leases.acquired_total - leases.released_total == len(self.granted) == leases.total_in_flight()

    def teardown(self) -> None:
        try:
            self._end()
        finally:
            self.loop.close()
            self.engine.dispose()
            shutil.rmtree(self.folder, ignore_errors=True)

    def _end(self) -> None:
        for grant in self.granted.values():
            grant.release("completed")
        for task in self.tasks:
            task.cancel()

        async def ended() -> None:
            await asyncio.gather(*self.tasks, return_exceptions=True)

        self.loop.run_until_complete(ended())
        scheduler = self.scheduler
        assert scheduler.leases.total_in_flight() == 0
        assert scheduler.admission.in_use == 0
        assert scheduler.room.waiting() == 0


MeteredModel.TestCase.settings = settings(
    max_examples=45, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_paid_2_metered_accounts_serve_exactly_when_the_spec_says = MeteredModel.TestCase


# -- the same with slots shared through Redis (SCALE-2) -------------------------------------------


class _Redis:
    url = ""


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if REDIS_SERVER is None:
        pytest.skip("needs redis-server (Debian's redis-server)")
    server = RedisServer().start()
    _Redis.url = server.url
    yield server.url
    server.remove()


class SharedMeteredModel(MeteredModel):
    def _scheduler(self) -> Scheduler:
        self.redis = Redis.from_url(_Redis.url, socket_timeout=5, socket_connect_timeout=5)
        clock = self.workspace.clock
        return Scheduler(
            clock=clock,
            directory=self.workspace.directory,
            leases=LeaseTable(),
            cooldowns=CooldownBook(clock, CooldownPolicy()),
            affinity=AffinityStore(self.workspace.engine, clock),
            admission=Admission(clock, 128),
            room=WaitRoom(1000),
            wait_timeout_s=10_000,
            shared=SharedSlots(SharedLimits(self.redis, namespace=f"metered-{next(_namespaces)}"), "one"),
        )

    def _quiet(self) -> None:
        async def still() -> None:  # Redis round trips take real time: hold still for a moment
            deadline = self.loop.time() + 10
            stable, last = 0, ()
            while stable < 2:
                assert self.loop.time() < deadline, "the scheduler did not settle"
                await asyncio.sleep(0.005)
                running = sum(1 for task in self.tasks if not task.done())
                waiting = self.scheduler.room.waiting()
                shared = self.scheduler.shared
                flushing = shared.pending if shared is not None else 0
                state = (running, waiting, flushing, sum(1 for task in self.tasks if task.done()))
                stable = stable + 1 if state == last and running == waiting and flushing == 0 else 0
                last = state

        self.loop.run_until_complete(still())
        super()._quiet()

    def _end(self) -> None:
        super()._end()
        shared = self.scheduler.shared
        assert shared is not None

        async def drained() -> None:
            await shared.drain()
            assert await shared.limits.in_flight(self.metered) == 0
            await shared.limits.aclose()
            await self.redis.aclose()

        self.loop.run_until_complete(drained())


SharedMeteredModel.TestCase.settings = settings(
    max_examples=20, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server (Debian's redis-server)")
def test_paid_2_metered_accounts_serve_exactly_when_the_spec_says_with_shared_slots(redis_url: str) -> None:
    SharedMeteredModel.TestCase().runTest()


@pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server (Debian's redis-server)")
async def test_paid_2_the_overflow_wait_wakes_at_overflow_after_s_with_shared_slots(
    redis_url: str, workspace: Workspace
) -> None:
    """SCALE-2: a call queued in Redis for a busy subscription account is woken by its own timer at
    ``overflow_after_s`` and served by the metered account, its place in Redis's queue given up."""
    group = workspace.group()
    subscription = workspace.account(group, limit=1)
    metered = workspace.account(group, provider=METERED, limit=1)
    await workspace.meter(group, MeteredRouting.OVERFLOW, 0.2)
    redis = Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=5)
    clock = workspace.clock
    scheduler = Scheduler(
        clock=clock,
        directory=workspace.directory,
        leases=LeaseTable(),
        cooldowns=CooldownBook(clock, CooldownPolicy()),
        affinity=AffinityStore(workspace.engine, clock),
        admission=Admission(clock, 128),
        room=WaitRoom(100),
        wait_timeout_s=30,
        eligibility=workspace.eligibility(),
        shared=SharedSlots(SharedLimits(redis, namespace=f"metered-{next(_namespaces)}"), "one"),
    )
    try:
        first = await scheduler.route(workspace.route(group), _nothing)
        assert first.account.id == subscription
        waiting = asyncio.ensure_future(scheduler.route(workspace.route(group), _nothing))
        for _ in range(200):
            if scheduler.room.waiting(subscription):
                break
            await asyncio.sleep(0.005)
        assert scheduler.room.waiting(subscription) == 1 and scheduler.room.waiting(metered) == 0
        clock.advance(0.2)
        grant = await asyncio.wait_for(waiting, 5)
        assert grant.account.id == metered
        assert grant.routing["metered"] is True and grant.routing["overflow_reason"] == "waited"
        for held in (first, grant):
            held.release("completed")
        assert scheduler.shared is not None
        await scheduler.shared.drain()
        assert await scheduler.shared.limits.in_flight(subscription) == 0
        assert await scheduler.shared.limits.in_flight(metered) == 0
    finally:
        if scheduler.shared is not None:
            await scheduler.shared.limits.aclose()
        await redis.aclose()
