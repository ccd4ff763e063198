"""The scheduler's stateful model (``test_scheduler_stateful``) with its other backend: account
slots, waiting and admission shared through a real Redis (SCALE-2), driven by the same rules and
held to the same invariants — never a slot past a limit, every lease counted once, waiters served
first come first served — and, at the end, nothing left in Redis either.

A second model runs two schedulers — two replicas — over one Redis: requests arrive at either, and
the limits and the first-come-first-served order hold over both together.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule
from redis.asyncio import Redis
from redis_server import REDIS_SERVER, RedisServer
from scheduler_harness import Workspace
from test_scheduler_stateful import SchedulerModel

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

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server (Debian's redis-server)")

_namespaces = itertools.count(1)


class _Redis:
    url = ""


@pytest.fixture(scope="module", autouse=True)
def redis_server() -> Iterator[RedisServer]:
    if REDIS_SERVER is None:
        pytest.skip("needs redis-server")
    server = RedisServer().start()
    _Redis.url = server.url
    yield server
    server.remove()


def shared_scheduler(workspace: Workspace, redis: Redis, namespace: str, replica: str) -> Scheduler:
    """A scheduler as the gateway builds one with ``SUBLANE_REDIS_URL``."""
    clock = workspace.clock
    return Scheduler(
        clock=clock,
        directory=workspace.directory,
        leases=LeaseTable(),
        cooldowns=CooldownBook(clock, CooldownPolicy()),
        affinity=AffinityStore(workspace.engine, clock),
        admission=Admission(clock, 128),
        room=WaitRoom(1000),
        wait_timeout_s=10_000,
        shared=SharedSlots(SharedLimits(redis, namespace=namespace), replica),
    )


async def _quiet(schedulers: list[Scheduler], tasks: list[asyncio.Task[Grant]]) -> None:
    """Until every running request is granted or waits on its bell, and every release reached
    Redis: Redis round trips take real time, so the state must hold still for a moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    stable = 0
    last: tuple[int, ...] = ()
    while stable < 2:
        assert loop.time() < deadline, "the schedulers did not settle"
        await asyncio.sleep(0.005)
        running = sum(1 for task in tasks if not task.done())
        waiting = sum(s.room.waiting() for s in schedulers)
        flushing = sum(s.shared.pending if s.shared is not None else 0 for s in schedulers)
        state = (running, waiting, flushing, sum(1 for task in tasks if task.done()))
        stable = stable + 1 if state == last and running == waiting and flushing == 0 else 0
        last = state


class SharedSchedulerModel(SchedulerModel):
    """The same model, the scheduler taking its slots in Redis."""

    def __init__(self) -> None:
        super().__init__()
        self.redis = Redis.from_url(_Redis.url, socket_timeout=5, socket_connect_timeout=5)
        self.namespace = f"model-{next(_namespaces)}"
        self.scheduler = shared_scheduler(self.workspace, self.redis, self.namespace, "one")

    def _settle(self) -> None:
        self.loop.run_until_complete(_quiet([self.scheduler], self.tasks))
        super()._settle()

    def teardown(self) -> None:
        try:
            self.loop.run_until_complete(_nothing_left(self, [self.scheduler]))
        finally:
            super().teardown()


async def _nothing_left(model: SchedulerModel, schedulers: list[Scheduler]) -> None:
    """At the end: every grant released, every request ended, and no slot, admission place or
    waiter left — on any replica, nor in Redis."""
    for grant in model.granted.values():
        grant.release("completed")
    model.granted.clear()
    for task in model.tasks:
        task.cancel()
    await asyncio.gather(*model.tasks, return_exceptions=True)
    for scheduler in schedulers:
        assert scheduler.shared is not None
        await scheduler.shared.drain()
        assert scheduler.leases.total_in_flight() == 0
        assert scheduler.admission.in_use == 0
        assert scheduler.room.waiting() == 0
    limits = schedulers[0].shared.limits  # type: ignore[union-attr]
    for account in model.accounts:  # no slot left behind in Redis either
        assert await limits.in_flight(account) == 0
    for scheduler in schedulers:
        await scheduler.shared.limits.aclose()  # type: ignore[union-attr]
    await limits.redis.aclose()


SharedSchedulerModel.TestCase.settings = settings(
    max_examples=25, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_shared_scheduler_model = SharedSchedulerModel.TestCase


class TwoReplicasModel(SchedulerModel):
    """Two schedulers — two replicas — over one Redis; requests arrive at either."""

    def __init__(self) -> None:
        super().__init__()
        self.redis = Redis.from_url(_Redis.url, socket_timeout=5, socket_connect_timeout=5)
        namespace = f"replicas-{next(_namespaces)}"
        self.replicas = [shared_scheduler(self.workspace, self.redis, namespace, name) for name in ("a", "b")]
        self.scheduler = self.replicas[0]
        self.owner: dict[int, Scheduler] = {}  # task index → the replica it arrived at

    def _settle(self) -> None:
        self.loop.run_until_complete(_quiet(self.replicas, self.tasks))
        super()._settle()

    def _room_waiting(self) -> int:
        return sum(scheduler.room.waiting() for scheduler in self.replicas)

    @rule(replica=st.integers(min_value=0, max_value=1))
    def acquire_at(self, replica: int) -> None:
        scheduler = self.replicas[replica]
        request = self.workspace.route(self.group)
        eligible = self.workspace.eligible(self.group)
        self.owner[len(self.tasks)] = scheduler
        self.tasks.append(self.loop.create_task(scheduler.acquire(request, eligible)))
        self._settle()

    @rule(data=st.data(), limit=st.integers(min_value=1, max_value=3))
    def change_limit(self, data: st.DataObject, limit: int) -> None:
        account = data.draw(st.sampled_from(self.accounts))
        self.loop.run_until_complete(self.workspace.change(account, max_concurrency=limit))
        self.limits[account] = limit
        for scheduler in self.replicas:  # the change reaches every replica (SCALE-2)
            scheduler.limits_changed(account)
        self._settle()

    @rule(data=st.data(), seconds=st.sampled_from([1.0, 5.0]))
    def cool_down(self, data: st.DataObject, seconds: float) -> None:
        account = data.draw(st.sampled_from(self.accounts))
        for scheduler in self.replicas:  # as published to every replica
            scheduler.cooldowns.rate_limited(account, seconds)
        self.reshuffled = True
        self._settle()

    @rule(seconds=st.sampled_from([0.5, 2.0, 6.0]))
    def clock_step(self, seconds: float) -> None:
        self.clock.advance(seconds)
        for scheduler in self.replicas:
            for account in self.accounts:
                scheduler.offer(account)
        self._settle()

    @precondition(lambda self: False)
    @rule()
    def acquire(self) -> None:  # replaced by acquire_at
        raise AssertionError

    @invariant()
    def no_new_slot_past_a_limit(self) -> None:
        for index in self.new_grants:
            account = self.granted[index].account.id
            held = sum(scheduler.leases.in_flight(account) for scheduler in self.replicas)
            assert held <= self.limits[account], (account, self.limits)

    @invariant()
    def every_lease_is_counted_once(self) -> None:
        acquired = sum(s.leases.acquired_total for s in self.replicas)
        released = sum(s.leases.released_total for s in self.replicas)
        in_flight = sum(s.leases.total_in_flight() for s in self.replicas)
        assert acquired - released == len(self.granted) == in_flight

    def teardown(self) -> None:
        try:
            self.loop.run_until_complete(_nothing_left(self, self.replicas))
        finally:
            super().teardown()


TwoReplicasModel.TestCase.settings = settings(
    max_examples=25, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_two_replicas_model = TwoReplicasModel.TestCase
