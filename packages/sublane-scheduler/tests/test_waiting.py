"""The wait room on its own: queue cap (WAIT-1/2), FIFO hand-over (WAIT-3), cancellation (WAIT-6)."""

from __future__ import annotations

import asyncio

import pytest
from scheduler_harness import settle

from sublane_core import SubLaneError
from sublane_scheduler import Lease, LeaseTable, Waiter, WaitRoom, wait_for_lease

MODEL = "gpt-5"


def hand_over(room: WaitRoom, table: LeaseTable, account_id: int, limit: int) -> int:
    def try_lease(account_id: int, waiter: Waiter) -> Lease | None:
        return table.try_acquire(account_id, limit, waiter.request_id, waiter.model)

    return room.offer(account_id, try_lease)


async def test_wait_1_the_queue_is_capped_per_group() -> None:
    room = WaitRoom(max_per_group=2)
    room.enter(1, [10], "a", MODEL)
    room.enter(1, [11], "b", MODEL)
    with pytest.raises(SubLaneError) as full:
        room.enter(1, [12], "c", MODEL)
    assert (full.value.code, full.value.status, full.value.retry_after) == ("account_queue_full", 429, 1)
    room.enter(2, [10], "d", MODEL)  # another group has its own queue
    assert room.waiting() == 3 and room.waiting_in_group(1) == 2 and room.waiting_in_group(2) == 1


async def test_wait_2_an_expired_wait_is_a_429_with_retry_after_1_and_leaves_the_queue() -> None:
    room = WaitRoom(max_per_group=5)
    waiter = room.enter(1, [10], "a", MODEL)
    with pytest.raises(SubLaneError) as expired:
        await wait_for_lease(room, waiter, 0.01)
    assert (expired.value.code, expired.value.status, expired.value.retry_after) == (
        "account_wait_timeout",
        429,
        1,
    )
    assert room.waiting() == 0 and room.waiting(10) == 0
    room.enter(1, [10], "b", MODEL)  # its place in the group's queue is free again


async def test_wait_3_first_come_first_served_per_account() -> None:
    room = WaitRoom(max_per_group=10)
    table = LeaseTable()
    waiters = [room.enter(1, [10], f"r{index}", MODEL) for index in range(4)]
    served: list[str] = []
    for _ in waiters:
        assert hand_over(room, table, 10, table.in_flight(10) + 1) == 1
        served.append(next(w.request_id for w in waiters if w.future.done() and w.request_id not in served))
    assert served == ["r0", "r1", "r2", "r3"]
    assert [waiter.future.result().request_id for waiter in waiters] == served


async def test_wait_3_one_free_slot_serves_exactly_one_waiter() -> None:
    room = WaitRoom(max_per_group=10)
    table = LeaseTable()
    holder = table.try_acquire(10, 1, "holder", MODEL)
    assert holder is not None
    table.on_release(lambda account_id: hand_over(room, table, account_id, 1))
    waiters = [room.enter(1, [10], f"r{index}", MODEL) for index in range(5)]
    tasks = [asyncio.ensure_future(wait_for_lease(room, waiter, 5)) for waiter in waiters]
    await settle()
    holder.release("completed")
    await settle()
    assert [task.done() for task in tasks] == [True, False, False, False, False]  # no herd
    assert room.waiting() == 4 and table.in_flight(10) == 1
    first = tasks[0].result()
    assert first.request_id == "r0"
    first.release("completed")
    await settle()
    assert [task.done() for task in tasks] == [True, True, False, False, False]
    for task in tasks[2:]:
        task.cancel()
    await asyncio.gather(*tasks[2:], return_exceptions=True)
    tasks[1].result().release("completed")
    assert room.waiting() == 0 and table.total_in_flight() == 0


async def test_wait_3_a_waiter_on_several_accounts_is_served_once() -> None:
    room = WaitRoom(max_per_group=10)
    table = LeaseTable()
    waiter = room.enter(1, [10, 11], "a", MODEL)
    later = room.enter(1, [11], "b", MODEL)
    assert room.waiting(10) == 1 and room.waiting(11) == 2
    assert hand_over(room, table, 10, 1) == 1
    assert waiter.future.result().account_id == 10
    assert room.waiting(10) == 0 and room.waiting(11) == 1  # gone from every account's queue
    assert hand_over(room, table, 11, 1) == 1
    assert later.future.result().account_id == 11
    assert table.total_in_flight() == 2 and room.waiting() == 0


async def test_wait_3_an_offer_stops_when_the_account_is_full() -> None:
    room = WaitRoom(max_per_group=10)
    table = LeaseTable()
    waiters = [room.enter(1, [10], f"r{index}", MODEL) for index in range(3)]
    assert hand_over(room, table, 10, 2) == 2  # two slots: the two oldest
    assert [waiter.future.done() for waiter in waiters] == [True, True, False]
    assert room.waiting() == 1


async def test_wait_6_a_cancelled_waiter_leaves_at_once() -> None:
    room = WaitRoom(max_per_group=10)
    waiter = room.enter(1, [10], "a", MODEL)
    task = asyncio.ensure_future(wait_for_lease(room, waiter, 30))
    await settle()
    assert room.waiting() == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert room.waiting() == 0 and room.waiting_in_group(1) == 0
    assert waiter.future.cancelled()


@pytest.mark.parametrize("turns", [0, 1])  # after two turns the waiter has its lease in hand
async def test_wait_6_a_slot_handed_over_at_the_moment_of_cancellation_is_given_back(turns: int) -> None:
    room = WaitRoom(max_per_group=10)
    table = LeaseTable()
    holder = table.try_acquire(10, 1, "holder", MODEL)
    assert holder is not None
    table.on_release(lambda account_id: hand_over(room, table, account_id, 1))
    first = room.enter(1, [10], "first", MODEL)
    second = room.enter(1, [10], "second", MODEL)
    cancelled = asyncio.ensure_future(wait_for_lease(room, first, 30))
    served = asyncio.ensure_future(wait_for_lease(room, second, 30))
    await settle()
    holder.release("completed")  # the slot is handed to `first`…
    assert first.future.done()
    for _ in range(turns):
        await asyncio.sleep(0)
    assert not cancelled.done()
    cancelled.cancel()  # …whose client goes away before it could use it
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    lease = await asyncio.wait_for(served, 1)  # given back once, and passed to the next waiter
    assert lease.request_id == "second"
    assert table.in_flight(10) == 1 and (table.acquired_total, table.released_total) == (3, 2)
    lease.release("completed")
    assert room.waiting() == 0 and table.total_in_flight() == 0


async def test_wait_6_shutdown_ends_every_waiter_at_once() -> None:
    room = WaitRoom(max_per_group=10)
    waiters = [room.enter(group, [10 + group], f"r{group}", MODEL) for group in (1, 2, 3)]
    tasks = [asyncio.ensure_future(wait_for_lease(room, waiter, 30)) for waiter in waiters]
    await settle()
    room.close()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 1)
    assert [getattr(result, "code", None) for result in results] == ["shutting_down"] * 3
    assert room.waiting() == 0
    with pytest.raises(SubLaneError) as closed:
        room.enter(1, [10], "late", MODEL)
    assert closed.value.code == "shutting_down"
