"""The lean Redis link's batching (issue #49) against a real ``redis-server``: the commands of one
event-loop turn go in one write and each gets its own answer; a lease is released exactly once
however many releases share a write; FIFO waiters across replicas hold when their asks share a
write; a caller that stops waiting leaves its answer to no one else; scripts Redis forgot are sent
again; a replica killed in the middle of its batches leaks no slot."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis_server import REDIS_SERVER, RedisServer
from shared_workers import cycle_in_batches

from sublane_scheduler._shared import ACQUIRE, SharedLimits

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.remove()


@pytest.fixture
async def limits(redis_server: RedisServer) -> AsyncIterator[SharedLimits]:
    client = Redis.from_url(redis_server.url, socket_timeout=2, socket_connect_timeout=2)
    limits = SharedLimits(client, namespace=f"b-{uuid.uuid4().hex[:8]}")
    await limits.version()  # connected: what follows is counted from here
    yield limits
    await limits.aclose()
    await client.aclose()


async def test_scale_2_the_acquires_of_one_loop_turn_share_one_write_and_each_gets_its_own_answer(
    limits: SharedLimits,
) -> None:
    assert await limits.acquire([(99, 1)], "known") == 99  # the script known to Redis: EVALSHA will do
    writes = limits.link.counts.writes
    taken = await asyncio.gather(*(limits.acquire([(1, 10)], f"r{index}") for index in range(40)))
    assert limits.link.counts.writes == writes + 1  # forty scripts, one round trip
    assert sorted(taken, key=str) == [1] * 10 + [None] * 30  # exactly the limit, never more
    assert await limits.in_flight(1) == 10
    holders = [f"r{index}" for index, account in enumerate(taken) if account == 1]
    released = await asyncio.gather(*(limits.release(1, holder) for holder in holders))
    assert released == [True] * 10 and await limits.in_flight(1) == 0


async def test_scale_3_a_lease_released_many_times_in_one_write_is_released_once(
    limits: SharedLimits,
) -> None:
    assert await limits.acquire([(2, 1)], "once") == 2
    answers = await asyncio.gather(*(limits.release(2, "once") for _ in range(10)))
    assert answers.count(True) == 1 and answers.count(False) == 9
    await limits.finish([(2, "once", ""), (2, "once", "")], [])  # releases in one pipeline: no error
    assert await limits.in_flight(2) == 0


async def test_scale_2_waiters_asking_in_one_write_are_still_served_first_come_first_served(
    redis_server: RedisServer,
) -> None:
    namespace = f"w-{uuid.uuid4().hex[:8]}"
    first, second = Redis.from_url(redis_server.url), Redis.from_url(redis_server.url)
    a, b = SharedLimits(first, namespace=namespace), SharedLimits(second, namespace=namespace)
    one = [(4, 1)]
    try:
        assert await a.acquire(one, "holder") == 4
        for replica, waiter in ((a, "w1"), (b, "w2"), (a, "w3")):
            assert await replica.acquire(one, waiter) is None
            await replica.enqueue([4], waiter)
        assert await a.release(4, "holder")
        writes = a.link.counts.writes
        got = await asyncio.gather(a.acquire(one, "w3"), b.acquire(one, "w2"), a.acquire(one, "w1"))
        assert a.link.counts.writes == writes + 1  # w3's and w1's asks went together
        assert got == [None, None, 4]  # the oldest waiter, whatever the order in the write
        assert await a.release(4, "w1")
        got = await asyncio.gather(a.acquire(one, "w3"), b.acquire(one, "w2"))
        assert got == [None, 4]
    finally:
        await a.aclose()
        await b.aclose()
        await first.aclose()
        await second.aclose()


async def test_scale_3_an_answer_nobody_waits_for_any_more_goes_to_no_one_else(
    limits: SharedLimits, redis_server: RedisServer
) -> None:
    """Callers cancelled after their command left: their answers are skipped, and every later
    command still gets its own (a shifted answer would hand one request another's slot)."""
    tasks = [asyncio.ensure_future(limits.acquire([(3, 100)], f"c{index}")) for index in range(30)]
    await asyncio.sleep(0)  # sent with this loop turn's write
    await asyncio.sleep(0)
    for task in tasks[::2]:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert all(task.result() == 3 for task in tasks[1::2])
    sync = SyncRedis.from_url(redis_server.url)
    try:
        for _ in range(3):
            in_redis = sync.zcard(f"{limits.prefix}:lease:3")
            assert await limits.in_flight(3) == in_redis  # the count's own answer, not a leftover
            assert await limits.acquire([(3, 100)], f"n{in_redis}") == 3
    finally:
        sync.close()


async def test_scale_4_scripts_redis_forgot_are_sent_again(
    limits: SharedLimits, redis_server: RedisServer
) -> None:
    """After ``SCRIPT FLUSH`` (or a restart) the scripts are unknown: alone and in a batch, each
    call is made all the same (``EVAL``)."""
    sync = SyncRedis.from_url(redis_server.url)
    try:
        assert await limits.acquire([(5, 2)], "a") == 5
        sync.script_flush()
        assert await limits.acquire([(5, 2)], "b") == 5
        sync.script_flush()
        await limits.finish([(5, "a", ""), (5, "b", "")], [])
        assert await limits.in_flight(5) == 0
    finally:
        sync.close()


async def test_scale_3_a_release_redis_forgot_is_made_when_its_caller_stopped_waiting(
    limits: SharedLimits, redis_server: RedisServer
) -> None:
    """A caller cancelled while its ``EVALSHA`` is out, answered ``NOSCRIPT``: the call is still
    made (``EVAL``), or a release or an unlock sent by a request whose client went away would be
    lost and its slot or lock held until its life ends."""
    sync = SyncRedis.from_url(redis_server.url)
    try:
        assert await limits.acquire([(6, 1)], "gone") == 6
        sync.script_flush()
        release = asyncio.ensure_future(limits.release(6, "gone"))
        await asyncio.sleep(0)  # the EVALSHA goes out with this turn's write
        await asyncio.sleep(0)
        release.cancel()
        await asyncio.wait({release})
        assert release.cancelled()
        await limits.version()  # one more round trip: the EVAL went out before it
        assert await limits.in_flight(6) == 0
        assert await limits.acquire([(6, 1)], "next") == 6
    finally:
        sync.close()


async def test_scale_3_a_take_redis_forgot_is_not_made_once_its_caller_stopped_waiting(
    limits: SharedLimits, redis_server: RedisServer
) -> None:
    """A take cancelled while its ``EVALSHA`` is out, answered ``NOSCRIPT``, is not sent again: its
    give-back (a script Redis knows) went out behind it and ran first, and a take made after it
    would hold the slot until its TTL."""
    sync = SyncRedis.from_url(redis_server.url)
    try:
        sync.script_flush()
        assert not await limits.release(7, "nobody")  # the give-back's script is known again
        take = asyncio.ensure_future(limits.acquire([(7, 1)], "gone"))
        await asyncio.sleep(0)  # the take's EVALSHA is queued for this turn's write
        take.cancel()
        give_back = asyncio.ensure_future(limits.release(7, "gone"))  # as the scheduler does
        await asyncio.wait({take, give_back})
        assert take.cancelled() and give_back.result() is False  # nothing was there to give back
        await limits.version()  # one more round trip after any answer to the take
        assert await limits.in_flight(7) == 0
        assert await limits.acquire([(7, 1)], "next") == 7
        # Takes sent together in one batch, its caller cancelled while waiting for the first answer.
        sync.script_flush()
        assert not await limits.release(8, "nobody")
        takes = [(ACQUIRE, *limits._acquire_call([(8, 2)], f"batch-{n}", "", None, None)) for n in (1, 2)]
        batch = asyncio.ensure_future(limits.link.run_all(takes))
        await asyncio.sleep(0)
        batch.cancel()
        gone = [asyncio.ensure_future(limits.release(8, f"batch-{n}")) for n in (1, 2)]
        await asyncio.wait({batch, *gone})
        assert batch.cancelled()
        await limits.version()
        assert await limits.in_flight(8) == 0
    finally:
        sync.close()


def test_scale_3_a_replica_killed_in_the_middle_of_its_batches_leaks_no_slot(
    redis_server: RedisServer,
) -> None:
    namespace = f"k-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    replica = context.Process(target=cycle_in_batches, args=(redis_server.url, namespace, ready))
    replica.start()
    assert ready.wait(30)  # a few cycles of taking and giving back in batches went by
    os.kill(replica.pid or 0, signal.SIGKILL)
    replica.join(timeout=10)

    async def survivor() -> None:
        client = Redis.from_url(redis_server.url)
        limits = SharedLimits(client, namespace=namespace, ttl_s=0.5)
        try:
            await asyncio.sleep(0.6)  # the dead replica's leases expired
            taken = await asyncio.gather(*(limits.acquire([(9, 8)], f"s{index}") for index in range(8)))
            assert taken == [9] * 8  # every slot is free again: none leaked
        finally:
            await limits.aclose()
            await client.aclose()

    asyncio.run(survivor())


async def test_scale_4_a_redis_that_stops_answering_is_coordination_unavailable_then_comes_back() -> None:
    """A Redis that hangs (here: stopped with SIGSTOP) fails the commands waiting on it after the
    client's socket timeout, and the next command after it wakes connects again."""
    server = RedisServer().start()
    assert server.process is not None
    client = Redis.from_url(server.url, socket_timeout=0.5, socket_connect_timeout=0.5)
    limits = SharedLimits(client, namespace="hang")
    loop = asyncio.get_running_loop()
    try:
        assert await limits.acquire([(1, 5)], "before") == 1
        os.kill(server.process.pid, signal.SIGSTOP)
        started = loop.time()
        answers = await asyncio.gather(
            *(limits.acquire([(1, 5)], f"during{index}") for index in range(3)), return_exceptions=True
        )
        assert all(getattr(answer, "code", None) == "coordination_unavailable" for answer in answers)
        assert 0.4 <= loop.time() - started < 3
        os.kill(server.process.pid, signal.SIGCONT)
        assert await limits.acquire([(1, 5)], "after") == 1  # a new connection, by itself
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        await limits.aclose()
        await client.aclose()
        server.remove()
