"""Cancellations around Redis commands (SCALE-3, SCALE-4), against a real ``redis-server``.

On Python 3.11 redis-py's asyncio client can lose a cancellation that arrives as a command
completes (its socket writes run under ``asyncio.wait_for``). A replica must still stop when told
to, and a request cancelled — its client gone — while its slot or member place was being taken in
Redis must leave neither behind until the TTL: the take may have been made there with its answer
lost, so it is given back."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from redis.asyncio import Redis
from redis_server import REDIS_SERVER, RedisServer
from scheduler_harness import Workspace
from test_scheduler_shared_stateful import shared_scheduler

from sublane_scheduler import Grant
from sublane_scheduler.shared import RefreshLocks, SharedLimits

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

#: Enough cancellations at random moments to land in every step of a command, many times over.
TRIES = 300


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.remove()


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    # A socket timeout, as the gateway sets one: redis-py then writes under asyncio.wait_for.
    client = Redis.from_url(redis_server.url, socket_timeout=5, socket_connect_timeout=5)
    yield client
    await client.aclose()


async def _moment() -> None:
    await asyncio.sleep(random.random() * 0.002)


async def test_scale_4_a_task_cancelled_during_a_redis_command_stops(redis: Redis) -> None:
    limits = SharedLimits(redis, namespace=f"c-{uuid.uuid4().hex[:8]}")

    async def poll_forever() -> None:  # as a replica's version poll does
        while True:
            await limits.version()

    try:
        await _poll_and_cancel(poll_forever)
    finally:
        await limits.aclose()


async def _poll_and_cancel(poll_forever: Callable[[], Awaitable[None]]) -> None:
    for _ in range(TRIES):
        task = asyncio.ensure_future(poll_forever())
        await _moment()
        task.cancel()
        try:
            async with asyncio.timeout(2):
                await asyncio.wait({task})
        finally:
            if not task.done():  # the cancellation was lost: stop it for good before failing
                while not task.done():
                    task.cancel()
                    await asyncio.sleep(0.01)
        assert task.cancelled()


async def test_scale_3_requests_cancelled_while_taking_a_slot_leave_nothing_behind(
    redis: Redis, workspace: Workspace
) -> None:
    namespace = f"c-{uuid.uuid4().hex[:8]}"
    scheduler = shared_scheduler(workspace, redis, namespace, "one")
    group = workspace.group()
    account = workspace.account(group, limit=2)
    await workspace.change(account)  # loaded into the directory
    user = 7
    outcomes = {"granted": 0, "cancelled": 0}
    for _ in range(TRIES):
        task: asyncio.Task[Grant] = workspace.start(scheduler, group, user=user, member_limit=3)
        await _moment()
        task.cancel()
        await asyncio.wait({task})
        if task.cancelled():
            outcomes["cancelled"] += 1
        else:
            task.result().release("completed")
            outcomes["granted"] += 1
    assert outcomes["granted"] and outcomes["cancelled"]  # both ends were exercised
    assert scheduler.shared is not None
    await scheduler.shared.drain()
    assert scheduler.leases.total_in_flight() == 0 and scheduler.admission.in_use == 0
    # Nothing left in Redis now, not after the TTL (30 s): no slot and no member place.
    assert await scheduler.shared.limits.in_flight(account) == 0
    assert await scheduler.shared.limits.member_in_use(user) == 0
    await scheduler.shared.limits.aclose()


async def test_scale_2_a_refresh_lock_taken_by_a_cancelled_waiter_is_let_go(redis: Redis) -> None:
    locks = RefreshLocks(SharedLimits(redis, namespace=f"c-{uuid.uuid4().hex[:8]}"), life_s=60)

    async def refresh_once() -> None:
        async with locks.hold(1):
            await asyncio.sleep(0)

    try:
        for attempt in range(TRIES):
            if attempt % 2:  # Redis forgot the scripts (a restart): each is sent again, whole
                await redis.script_flush()
            task = asyncio.ensure_future(refresh_once())
            await _moment()
            task.cancel()
            await asyncio.wait({task})
            # The lock is free at once for the next refresh, not after its life of 60 s.
            async with asyncio.timeout(1):
                async with locks.hold(1):
                    pass
    finally:
        await locks.limits.aclose()
