"""Limits shared through Redis (SCALE-2…4) against a real ``redis-server``: leases exact across
real processes, released exactly once, expiring after a replica's SIGKILL, release notifications
across replicas, member concurrency and RPM shared, an outage answered ``coordination_unavailable``
and left by itself — and a stateful model that drives the Redis leases and the in-process lease
table with the same operations and finds them in the same state after every step."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis_server import REDIS_SERVER, RedisServer
from shared_workers import hold_leases, take_and_wait

from sublane_core import SubLaneError
from sublane_scheduler import LeaseTable
from sublane_scheduler._shared import RefreshLocks, SharedLimits

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.remove()


@pytest.fixture
async def limits(redis_server: RedisServer) -> AsyncIterator[SharedLimits]:
    client = Redis.from_url(redis_server.url, socket_timeout=2, socket_connect_timeout=2)
    limits = SharedLimits(client, namespace=f"t-{uuid.uuid4().hex[:8]}")
    yield limits
    await limits.aclose()
    await client.aclose()


async def test_scale_2_a_lease_goes_to_the_first_candidate_with_room_and_is_released_once(
    limits: SharedLimits,
) -> None:
    assert await limits.acquire([(1, 1), (2, 2)], "r1") == 1
    assert await limits.acquire([(1, 1), (2, 2)], "r2") == 2
    assert await limits.acquire([(1, 1), (2, 2)], "r3") == 2
    assert await limits.acquire([(1, 1), (2, 2)], "r4") is None  # every slot taken
    assert [await limits.in_flight(account) for account in (1, 2)] == [1, 2]
    assert await limits.release(2, "r2") is True
    assert await limits.release(2, "r2") is False  # exactly once
    assert await limits.acquire([(1, 1), (2, 2)], "r4") == 2
    assert await limits.renew(2, "r4") is True and await limits.renew(2, "r2") is False


async def test_scale_2_max_concurrency_holds_across_two_processes(redis_server: RedisServer) -> None:
    namespace, limit = f"p-{uuid.uuid4().hex[:8]}", 3
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=hold_leases, args=(redis_server.url, namespace, 100, limit)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    with SyncRedis.from_url(redis_server.url) as client:
        seen = {int(value) for value in client.smembers(f"{namespace}:seen")}
        in_flight = client.zcard(f"{{{namespace}}}:lease:7")
    assert seen and max(seen) <= limit  # never more holders than the limit, across processes
    assert limit in seen  # and the limit was reached: the processes did contend
    assert in_flight == 0  # no slot leaked


async def test_scale_3_a_killed_replicas_lease_expires_after_the_ttl(redis_server: RedisServer) -> None:
    namespace = f"k-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    replica = context.Process(target=take_and_wait, args=(redis_server.url, namespace, ready))
    replica.start()
    assert ready.wait(30)
    os.kill(replica.pid or 0, signal.SIGKILL)
    replica.join(timeout=10)
    client = Redis.from_url(redis_server.url)
    survivor = SharedLimits(client, namespace=namespace, ttl_s=0.5)
    try:
        assert await survivor.acquire([(3, 1)], "next") is None  # still held by the dead one
        await asyncio.sleep(0.6)
        assert await survivor.acquire([(3, 1)], "next") == 3  # expired: the slot is free again
    finally:
        await survivor.aclose()
        await client.aclose()


async def test_scale_2_a_release_on_one_replica_reaches_the_other_within_100_ms(
    redis_server: RedisServer,
) -> None:
    namespace = f"n-{uuid.uuid4().hex[:8]}"
    first, second = Redis.from_url(redis_server.url), Redis.from_url(redis_server.url)
    here, there = SharedLimits(first, namespace=namespace), SharedLimits(second, namespace=namespace)
    heard: asyncio.Queue[tuple[int, float]] = asyncio.Queue()

    async def listen() -> None:
        async for account_id in there.released_accounts():
            await heard.put((account_id, time.perf_counter()))

    listener = asyncio.ensure_future(listen())
    try:
        await asyncio.sleep(0.2)  # subscribed
        assert await here.acquire([(5, 1)], "r") == 5
        await there.enqueue([5], "waiter")  # a request waits for the account on the other replica
        released_at = time.perf_counter()
        assert await here.release(5, "r")
        account_id, at = await asyncio.wait_for(heard.get(), 1)
        assert account_id == 5 and at - released_at < 0.1
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await here.aclose()
        await there.aclose()
        await first.aclose()
        await second.aclose()


async def test_scale_2_a_release_nobody_waits_for_is_not_published(redis_server: RedisServer) -> None:
    """Issue #49: a release reaches the other replicas only when a request waits for the account
    (a message per call would cost every replica more than the call's own Redis work)."""
    namespace = f"n-{uuid.uuid4().hex[:8]}"
    first, second = Redis.from_url(redis_server.url), Redis.from_url(redis_server.url)
    here, there = SharedLimits(first, namespace=namespace), SharedLimits(second, namespace=namespace)
    heard: asyncio.Queue[int] = asyncio.Queue()

    async def listen() -> None:
        async for account_id in there.released_accounts():
            await heard.put(account_id)

    listener = asyncio.ensure_future(listen())
    try:
        await asyncio.sleep(0.2)  # subscribed
        for request_id in ("r1", "r2"):
            assert await here.acquire([(6, 2)], request_id) == 6
        assert await here.release(6, "r1")
        await asyncio.sleep(0.1)
        assert heard.empty()  # nobody waits: nothing published
        await there.enqueue([6], "waiter")
        assert await here.release(6, "r2")
        assert await asyncio.wait_for(heard.get(), 1) == 6
        assert not await here.release(6, "r2")  # released once: a second release publishes nothing
        await asyncio.sleep(0.1)
        assert heard.empty()
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await here.aclose()
        await there.aclose()
        await first.aclose()
        await second.aclose()


async def test_scale_2_waiters_are_served_first_come_first_served_across_replicas(
    redis_server: RedisServer,
) -> None:
    """WAIT-3 across replicas: a freed slot goes to the oldest waiter whichever replica holds it;
    a newcomer does not barge past the queue; a waiter whose replica stopped renewing it is dropped."""
    namespace = f"w-{uuid.uuid4().hex[:8]}"
    first, second = Redis.from_url(redis_server.url), Redis.from_url(redis_server.url)
    a = SharedLimits(first, namespace=namespace)
    b = SharedLimits(second, namespace=namespace, ttl_s=0.3)  # replica B's waiters expire soon
    one = [(4, 1)]
    try:
        assert await a.acquire(one, "holder") == 4
        for replica, waiter in ((a, "w1"), (b, "w2"), (a, "w3")):
            assert await replica.acquire(one, waiter) is None
            await replica.enqueue([4], waiter)
        assert await a.release(4, "holder")
        # everyone tries at once after the release; only the oldest gets it
        got = [await replica.acquire(one, waiter) for replica, waiter in ((a, "w3"), (b, "w2"), (a, "w1"))]
        assert got == [None, None, 4]
        assert await a.acquire(one, "newcomer") is None  # full, and would not barge anyway
        assert await a.release(4, "w1")
        assert await a.acquire(one, "newcomer") is None  # w2 and w3 wait: no barging
        await asyncio.sleep(0.4)  # replica B died: w2 was not renewed
        assert await a.acquire(one, "w3") == 4  # w2 dropped, w3 is the oldest now
        assert await a.release(4, "w3")
        assert await a.acquire(one, "newcomer") == 4  # the queue is empty
    finally:
        await a.aclose()
        await b.aclose()
        await first.aclose()
        await second.aclose()


async def test_scale_2_member_concurrency_and_rpm_are_counted_across_replicas(
    redis_server: RedisServer,
) -> None:
    namespace = f"m-{uuid.uuid4().hex[:8]}"
    first, second = Redis.from_url(redis_server.url), Redis.from_url(redis_server.url)
    a, b = SharedLimits(first, namespace=namespace), SharedLimits(second, namespace=namespace)
    try:
        await a.admit(9, "t1", member_limit=2, rpm=0)
        await b.admit(9, "t2", member_limit=2, rpm=0)
        with pytest.raises(SubLaneError) as busy:
            await a.admit(9, "t3", member_limit=2, rpm=0)
        assert busy.value.code == "member_busy"
        assert await b.leave(9, "t1") and not await a.leave(9, "t1")  # once
        await a.admit(9, "t3", member_limit=2, rpm=0)
        assert await b.member_in_use(9) == 2
        await a.admit(10, "u1", member_limit=0, rpm=2)
        await b.admit(10, "u2", member_limit=0, rpm=2)
        with pytest.raises(SubLaneError) as limited:
            await a.admit(10, "u3", member_limit=0, rpm=2)
        assert limited.value.code == "member_rate_limited"
        assert limited.value.retry_after is not None and 1 <= limited.value.retry_after <= 60
    finally:
        await a.aclose()
        await b.aclose()
        await first.aclose()
        await second.aclose()


async def test_scale_4_an_unreachable_redis_is_coordination_unavailable_until_it_is_back() -> None:
    server = RedisServer().start()
    client = Redis.from_url(server.url, socket_timeout=1, socket_connect_timeout=1)
    shared = SharedLimits(client, namespace="outage")
    try:
        assert await shared.acquire([(1, 1)], "before") == 1
        server.stop()
        with pytest.raises(SubLaneError) as refused:
            await shared.acquire([(1, 1)], "during")
        assert refused.value.code == "coordination_unavailable" and refused.value.status == 503
        assert refused.value.retry_after is not None
        with pytest.raises(SubLaneError):
            await shared.admit(1, "t", member_limit=1, rpm=0)  # never admitted without the limits
        server.start()
        assert await shared.acquire([(1, 1)], "after") == 1  # by itself: a new connection, an empty Redis
    finally:
        await shared.aclose()
        await client.aclose()
        server.remove()


# -- one interface, two backends: the same operations, the same state ---------------------------------


class LeasesOnBothBackends(RuleBasedStateMachine):
    """The Redis leases and the in-process lease table, driven with the same operations."""

    def __init__(self) -> None:
        super().__init__()
        assert _SERVER is not None
        self.loop = asyncio.new_event_loop()
        self.client = Redis.from_url(_SERVER.url)
        self.shared = SharedLimits(self.client, namespace=f"s-{uuid.uuid4().hex[:8]}")
        self.local = LeaseTable()
        self.held: dict[str, object] = {}  # request id -> the in-process lease
        self.limits = {1: 1, 2: 2, 3: 3}
        self.released: list[str] = []
        self.counter = 0

    def run(self, work: object) -> object:
        return self.loop.run_until_complete(work)  # type: ignore[arg-type]

    @rule(order=st.permutations([1, 2, 3]), size=st.integers(1, 3))
    def acquire(self, order: list[int], size: int) -> None:
        self.counter += 1
        request_id = f"r{self.counter}"
        candidates = [(account, self.limits[account]) for account in order[:size]]
        shared = self.run(self.shared.acquire(candidates, request_id))
        local = None
        for account, limit in candidates:
            local = self.local.try_acquire(account, limit, request_id, "m")
            if local is not None:
                break
        assert shared == (local.account_id if local is not None else None)
        if local is not None:
            self.held[request_id] = local

    @rule(data=st.data(), twice=st.booleans())
    def release(self, data: st.DataObject, twice: bool) -> None:
        if not self.held:
            return
        request_id = data.draw(st.sampled_from(sorted(self.held)))
        lease = self.held.pop(request_id)
        account_id = lease.account_id  # type: ignore[attr-defined]
        assert self.run(self.shared.release(account_id, request_id)) is True
        assert lease.release("success") is True  # type: ignore[attr-defined]
        if twice:
            assert self.run(self.shared.release(account_id, request_id)) is False
            assert lease.release("success") is False  # type: ignore[attr-defined]

    @invariant()
    def same_in_flight_within_the_limits(self) -> None:
        for account, limit in self.limits.items():
            shared = self.run(self.shared.in_flight(account))
            assert shared == self.local.in_flight(account) <= limit

    def teardown(self) -> None:
        for request_id, lease in self.held.items():
            assert self.run(self.shared.release(lease.account_id, request_id))  # type: ignore[attr-defined]
        for account in self.limits:
            assert self.run(self.shared.in_flight(account)) == 0  # nothing leaks
        self.run(self.shared.aclose())
        self.run(self.client.aclose())
        self.loop.close()


_SERVER: RedisServer | None = None


def test_scale_2_redis_and_in_process_leases_agree_step_by_step(redis_server: RedisServer) -> None:
    global _SERVER
    _SERVER = redis_server
    runner = LeasesOnBothBackends.TestCase
    runner.settings = settings(
        max_examples=30, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    runner().runTest()


async def test_scale_2_one_refresh_per_account_at_a_time_across_replicas_with_growing_fences(
    redis_server: RedisServer,
) -> None:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    clients = [Redis.from_url(redis_server.url, socket_timeout=2) for _ in range(2)]
    replicas = [RefreshLocks(SharedLimits(client, namespace=namespace), poll_s=0.005) for client in clients]
    inside: list[int] = []
    overlaps = 0
    tokens: list[tuple[int, int]] = []  # (account, fence) in the order the lock was taken

    async def refresh(replica: RefreshLocks, account: int) -> None:
        nonlocal overlaps
        async with replica.hold(account) as fence:
            assert await fence.valid()
            if account in inside:
                overlaps += 1
            inside.append(account)
            tokens.append((account, fence.token))
            await asyncio.sleep(0.01)
            inside.remove(account)

    await asyncio.gather(*(refresh(replicas[index % 2], 7) for index in range(12)), refresh(replicas[0], 8))
    assert overlaps == 0  # one refresh per account at a time, over both replicas
    seven = [token for account, token in tokens if account == 7]
    assert seven == list(range(1, 13))  # every later holder has a larger fence
    assert [token for account, token in tokens if account == 8] == [1]  # another account: its own lock
    for replica in replicas:
        await replica.limits.aclose()
    for client in clients:
        await client.aclose()


async def test_scale_2_a_refresh_lock_that_outlived_its_life_is_no_longer_valid(
    redis_server: RedisServer,
) -> None:
    client = Redis.from_url(redis_server.url, socket_timeout=2)
    locks = RefreshLocks(SharedLimits(client, namespace=f"t-{uuid.uuid4().hex[:8]}"), life_s=0.2, poll_s=0.01)
    async with locks.hold(1) as stalled:
        await asyncio.sleep(0.3)  # a replica stalled past its lock
        async with locks.hold(1) as next_holder:  # another took it meanwhile
            assert next_holder.token > stalled.token  # a larger fence: its write wins (SCALE-2)
            assert not await stalled.valid()  # the stalled one must not spend the refresh token
            assert await next_holder.valid()
    await locks.limits.aclose()
    await client.aclose()
