"""A request's way to Redis (issue #49) against a real ``redis-server``: a member with limits is
admitted with the request's first slot in one script call, refused as in one process (their limit
first, nothing taken, no routing), and counted when the selection refuses before any slot."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from redis_server import REDIS_SERVER, RedisServer
from scheduler_harness import MODEL, Workspace
from test_scheduler_shared_stateful import shared_scheduler

from sublane_core import SubLaneError
from sublane_scheduler import Scheduler

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.remove()


@pytest.fixture
async def scheduler(redis_server: RedisServer, workspace: Workspace) -> AsyncIterator[Scheduler]:
    client = Redis.from_url(redis_server.url, socket_timeout=5, socket_connect_timeout=5)
    scheduler = shared_scheduler(workspace, client, f"o-{uuid.uuid4().hex[:8]}", "one")
    yield scheduler
    assert scheduler.shared is not None
    await scheduler.shared.drain()
    await scheduler.shared.limits.aclose()
    await client.aclose()


async def test_scale_2_a_member_with_limits_is_admitted_with_the_first_slot_in_one_round_trip(
    scheduler: Scheduler, workspace: Workspace
) -> None:
    shared = scheduler.shared
    assert shared is not None
    group = workspace.group()
    account = workspace.account(group, limit=2)
    await workspace.change(account)
    warm = await workspace.grant(scheduler, group, user=4, member_limit=1)  # the script known to Redis
    warm.release("completed")
    warm.ticket.close()
    await shared.drain()
    counts = shared.limits.link.counts
    commands, writes = counts.commands, counts.writes
    grant = await workspace.grant(scheduler, group, user=5, member_limit=1, rpm=10)
    assert (counts.commands - commands, counts.writes - writes) == (1, 1)  # place and slot at once
    assert await shared.limits.member_in_use(5) == 1 and await shared.limits.in_flight(account) == 1
    with pytest.raises(SubLaneError) as busy:  # the member's one place is taken: refused, nothing taken
        await workspace.grant(scheduler, group, user=5, member_limit=1, rpm=10)
    assert busy.value.code == "member_busy" and busy.value.routing is None
    assert await shared.limits.in_flight(account) == 1 and scheduler.admission.in_use == 1
    grant.release("completed")
    grant.ticket.close()
    await shared.drain()
    assert await shared.limits.member_in_use(5) == 0 and await shared.limits.in_flight(account) == 0


async def test_scale_2_a_member_refused_before_any_slot_is_counted_and_their_limit_comes_first(
    scheduler: Scheduler, workspace: Workspace
) -> None:
    """In one process the admission precedes the selection: a request the selection refuses (no
    account serves the model) still counts against the member's RPM, and a member over their limit
    hears of their limit, not of the model."""
    shared = scheduler.shared
    assert shared is not None
    group = workspace.group()
    workspace.account(group, limit=2)
    with pytest.raises(SubLaneError) as missing:
        await workspace.grant(scheduler, group, model="unknown-model", user=6, rpm=1)
    assert missing.value.code == "model_not_found"
    with pytest.raises(SubLaneError) as limited:  # the refused request used the minute's one call
        await workspace.grant(scheduler, group, model=MODEL, user=6, rpm=1)
    assert limited.value.code == "member_rate_limited" and limited.value.routing is None
    with pytest.raises(SubLaneError) as still:
        await workspace.grant(scheduler, group, model="unknown-model", user=6, rpm=1)
    assert still.value.code == "member_rate_limited"
    assert scheduler.admission.in_use == 0


async def test_scale_3_a_members_place_goes_back_at_once_while_slots_wait_for_the_records(
    scheduler: Scheduler, workspace: Workspace
) -> None:
    """A slot goes back once its call's record is written (SCALE-3); a member's place at once, not
    behind that wait (their next call must find it free), also when it ends while another call's
    slot is waiting for its record."""
    shared = scheduler.shared
    assert shared is not None
    written = asyncio.Event()
    shared.before_release = written.wait  # the history writer, holding on to the records
    group = workspace.group()
    account = workspace.account(group, limit=2)
    await workspace.change(account)
    earlier = await workspace.grant(scheduler, group, user=9)
    member = await workspace.grant(scheduler, group, user=8, member_limit=1)
    assert await shared.limits.member_in_use(8) == 1
    earlier.release("completed")  # its slot waits for its record ...
    await asyncio.sleep(0.05)
    member.release("completed")  # ... when the member's call ends: their place goes back at once
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 2
    while await shared.limits.member_in_use(8):
        assert loop.time() < deadline, "the member's place waited for the records"
        await asyncio.sleep(0.01)
    assert await shared.limits.in_flight(account) == 2  # both slots still wait (SCALE-3)
    written.set()
    await shared.drain()
    assert await shared.limits.in_flight(account) == 0
