"""``Scheduler.acquire`` end to end over a real SQLite workspace: admission, waiting, affinity,
rotation and cooldowns together (SPEC §1–5). Only the clock is fake; tasks are real asyncio tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scheduler_harness import MODEL, OTHER_MODEL, Eligible, Workspace, eventually, settle
from sqlmodel import Session, select

from sublane_core import AUTH_OK, AUTH_REAUTH_REQUIRED, Affinity, SubLaneError, signals
from sublane_scheduler import (
    AffinityStore,
    Candidates,
    CooldownPolicy,
    Grant,
    Scheduler,
    binding_digest,
)


async def refused(
    scheduler: Scheduler, workspace: Workspace, group: int, *, model: str = MODEL, **extra: Any
) -> SubLaneError:
    """The refusal of a new request (it must be refused)."""
    request = workspace.route(group, model=model, **extra)
    with pytest.raises(SubLaneError) as error:
        await scheduler.acquire(request, workspace.eligible(group, model))
    return error.value


def assert_idle(scheduler: Scheduler) -> None:
    """Nothing left behind: no slot, no admission place, no waiter (ADM-6, WAIT-6)."""
    assert scheduler.leases.total_in_flight() == 0
    assert scheduler.leases.acquired_total == scheduler.leases.released_total
    assert scheduler.admission.in_use == 0
    assert scheduler.room.waiting() == 0


def hiding(eligible: Eligible, hidden: set[int]) -> Eligible:
    """``eligible`` without the accounts in ``hidden`` (as if they became ineligible)."""

    async def wrapped() -> Candidates:
        candidates = await eligible()
        kept = [account for account in candidates.accounts if account.id not in hidden]
        return Candidates(kept, candidates.excluded)

    return wrapped


def done_more_than(tasks: list[asyncio.Task[Grant]], count: int) -> Callable[[], bool]:
    return lambda: sum(task.done() for task in tasks) > count


@pytest.fixture
def releases() -> Iterator[list[signals.LeaseReleased]]:
    seen: list[signals.LeaseReleased] = []
    disconnect = signals.lease_released.connect(seen.append)
    yield seen
    disconnect()


# -- ADM -------------------------------------------------------------------------------------------


async def test_adm_2_a_busy_workspace_refuses_before_any_selection(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=5)
    scheduler = workspace.scheduler(capacity=2)
    held = [await workspace.grant(scheduler, group) for _ in range(2)]
    busy = await refused(scheduler, workspace, group)
    assert (busy.code, busy.status, busy.retry_after) == ("workspace_busy", 429, 1)
    assert scheduler.leases.total_in_flight() == 2 and scheduler.room.waiting() == 0
    for grant in held:
        grant.release("completed")
    assert_idle(scheduler)


async def test_adm_3_member_concurrency_counts_running_requests(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=10)
    scheduler = workspace.scheduler()
    held = [await workspace.grant(scheduler, group, user=1, member_limit=2) for _ in range(2)]
    busy = await refused(scheduler, workspace, group, user=1, member_limit=2)
    assert (busy.code, busy.status) == ("member_busy", 429)
    held.append(await workspace.grant(scheduler, group, user=2, member_limit=2))
    held.append(await workspace.grant(scheduler, group, user=1, member_limit=0))  # 0 = unlimited
    for grant in held:
        grant.release("completed")
    assert_idle(scheduler)


async def test_adm_4_a_waiting_request_uses_its_allowance_once(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holders = [await workspace.grant(scheduler, group, user=2) for _ in range(2)]
    hidden: set[int] = set()
    request = workspace.route(group, user=1, rpm=3)
    waiting = asyncio.ensure_future(scheduler.acquire(request, hiding(workspace.eligible(group), hidden)))
    await eventually(lambda: scheduler.room.waiting() == 1)
    hidden.add(first)
    next(grant for grant in holders if grant.account.id == first).release("completed")
    await eventually(lambda: scheduler.room.waiting() == 1 and scheduler.leases.in_flight(first) == 0)
    assert not waiting.done()  # woken, refused the account that left, waiting again (WAIT-5)
    next(grant for grant in holders if grant.account.id == second).release("completed")
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.id == second
    grant.release("completed")
    for _ in range(2):  # three calls this minute: the waiting one was charged once
        (await workspace.grant(scheduler, group, user=1, rpm=3)).release("completed")
    limited = await refused(scheduler, workspace, group, user=1, rpm=3)
    assert limited.code == "member_rate_limited" and limited.retry_after is not None
    assert_idle(scheduler)


async def test_adm_5_two_requests_never_take_one_last_slot(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    eligible = workspace.eligible(group)
    requests = [  # new conversations too: their first binding read is a thread hop before selection
        workspace.route(group, key=f"thread-{index}" if index % 2 else None, wait=False)
        for index in range(20)
    ]
    results = await asyncio.gather(
        *(scheduler.acquire(request, eligible) for request in requests), return_exceptions=True
    )
    grants = [result for result in results if isinstance(result, Grant)]
    assert len(grants) == 1 and grants[0].account.id == account
    assert {getattr(result, "code", None) for result in results if result not in grants} == {
        "account_wait_timeout"
    }
    assert scheduler.leases.in_flight(account) == 1
    grants[0].release("completed")
    assert_idle(scheduler)


async def test_adm_6_a_grant_gives_back_its_slot_and_ticket_once(
    workspace: Workspace, releases: list[signals.LeaseReleased]
) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group, member_limit=1)
    assert scheduler.admission.member_in_use(1) == 1
    for outcome in ("completed", "canceled", "upstream_error"):
        grant.release(outcome)
    assert [release.outcome for release in releases] == ["completed"]
    assert_idle(scheduler)


async def test_adm_6_a_request_cancelled_while_its_binding_is_written_gives_its_slot_back(
    workspace: Workspace,
) -> None:
    class SlowStore(AffinityStore):
        """A binding write that takes its time (a busy database)."""

        entered = asyncio.Event()

        async def bind(
            self, digest: str, group_id: int, account_id: int, model: str, user_id: int | None = None
        ) -> None:
            self.entered.set()
            await asyncio.sleep(30)

    group = workspace.group()
    account = workspace.account(group, limit=1)
    store = SlowStore(workspace.engine, workspace.clock)
    scheduler = workspace.scheduler(affinity=store)
    task = workspace.start(scheduler, group, key="thread-1")
    await asyncio.wait_for(store.entered.wait(), 2)
    assert scheduler.leases.in_flight(account) == 1  # the slot was taken with the selection
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_idle(scheduler)


async def test_adm_7_lowering_a_limit_lets_admitted_requests_finish_and_stops_new_admission(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=3)
    scheduler = workspace.scheduler()
    running = [await workspace.grant(scheduler, group) for _ in range(3)]
    await workspace.change(account, max_concurrency=1)
    scheduler.limits_changed(account)
    assert all(not grant.lease.released for grant in running)  # admitted requests keep running
    waiting = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 1)
    running[0].release("completed")
    running[1].release("completed")
    await settle()
    assert not waiting.done() and scheduler.leases.in_flight(account) == 1  # 1 is not below 1
    running[2].release("completed")
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.max_concurrency == 1 and scheduler.leases.in_flight(account) == 1
    grant.release("completed")
    assert_idle(scheduler)


async def test_adm_7_raising_a_limit_wakes_waiters_at_once(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group)
    waiters = [workspace.start(scheduler, group) for _ in range(3)]
    await eventually(lambda: scheduler.room.waiting() == 3)
    await workspace.change(account, max_concurrency=3)
    scheduler.limits_changed(account)
    await settle()
    assert [task.done() for task in waiters] == [True, True, False]  # no release was needed
    assert scheduler.leases.in_flight(account) == 3
    holder.release("completed")
    grants = [await asyncio.wait_for(task, 2) for task in waiters]
    for grant in grants:
        grant.release("completed")
    assert_idle(scheduler)


async def test_adm_7_a_limit_lowered_during_a_selection_applies_to_it(workspace: Workspace) -> None:
    class SlowStore(AffinityStore):
        """A first read of a binding that takes its time (a busy database)."""

        entered = asyncio.Event()
        proceed = asyncio.Event()

        async def binding(self, digest: str) -> tuple[int, str | None] | None:
            self.entered.set()
            await self.proceed.wait()
            return await super().binding(digest)

    group = workspace.group()
    account = workspace.account(group, limit=2)
    scheduler = workspace.scheduler(affinity=SlowStore(workspace.engine, workspace.clock))
    running = await workspace.grant(scheduler, group)
    selecting = workspace.start(scheduler, group, key="new-thread", wait=False)
    await asyncio.wait_for(SlowStore.entered.wait(), 2)  # candidates read with the limit at 2…
    await workspace.change(account, max_concurrency=1)  # …lowered to 1 before the slot is taken
    scheduler.limits_changed(account)
    SlowStore.proceed.set()
    with pytest.raises(SubLaneError) as full:
        await selecting
    assert full.value.code == "account_wait_timeout" and scheduler.leases.in_flight(account) == 1
    running.release("completed")
    assert_idle(scheduler)


# -- WAIT ------------------------------------------------------------------------------------------


async def test_wait_1_an_unbound_request_waits_for_any_eligible_account(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holders = {grant.account.id: grant for grant in [await workspace.grant(scheduler, group) for _ in "ab"]}
    assert set(holders) == {first, second}
    waiting = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 1)
    assert scheduler.room.waiting(first) == scheduler.room.waiting(second) == 1
    holders[second].release("completed")
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.id == second and grant.routing["rule"] == "uniform_rotation"
    assert scheduler.room.waiting(first) == 0
    grant.release("completed")
    holders[first].release("completed")
    assert_idle(scheduler)


async def test_wait_2_a_full_queue_is_a_429_with_retry_after_1(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler(queue=2)
    holder = await workspace.grant(scheduler, group)
    waiting = [workspace.start(scheduler, group) for _ in range(2)]
    await eventually(lambda: scheduler.room.waiting() == 2)
    full = await refused(scheduler, workspace, group)
    assert (full.code, full.status, full.retry_after) == ("account_queue_full", 429, 1)
    assert scheduler.admission.in_use == 3  # the refused request left admission again
    holder.release("completed")
    for task in waiting:
        (await asyncio.wait_for(task, 2)).release("completed")
    assert_idle(scheduler)


async def test_wait_2_an_expired_wait_is_a_429_with_retry_after_1(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler(wait_timeout_s=0.05)
    holder = await workspace.grant(scheduler, group)
    expired = await refused(scheduler, workspace, group)
    assert (expired.code, expired.status, expired.retry_after) == ("account_wait_timeout", 429, 1)
    now = await refused(scheduler, workspace, group, wait=False)  # a prewarm does not wait at all
    assert now.code == "account_wait_timeout"
    holder.release("completed")
    assert_idle(scheduler)


async def test_wait_2_a_woken_request_refused_on_re_check_does_not_wait_afresh(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler(wait_timeout_s=30)
    holders = {grant.account.id: grant for grant in [await workspace.grant(scheduler, group) for _ in "ab"]}
    hidden: set[int] = set()
    request = workspace.route(group)
    waiting = asyncio.ensure_future(scheduler.acquire(request, hiding(workspace.eligible(group), hidden)))
    await eventually(lambda: scheduler.room.waiting() == 1)
    workspace.clock.advance(31)  # its 30 s are used up…
    hidden.add(first)
    holders[first].release("completed")  # …when it is handed a slot it may no longer use
    with pytest.raises(SubLaneError) as expired:
        await asyncio.wait_for(waiting, 1)  # one deadline for the whole wait, not one per wake-up
    assert (expired.value.code, expired.value.retry_after) == ("account_wait_timeout", 1)
    holders[second].release("completed")
    assert_idle(scheduler)


async def test_wait_3_first_come_first_served_per_account(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group)
    waiting: list[asyncio.Task[Grant]] = []
    for index in range(5):
        waiting.append(workspace.start(scheduler, group, key=f"thread-{index}"))
        await eventually(lambda: scheduler.room.waiting() == len(waiting))
    order: list[int] = []
    current = holder
    for _ in waiting:
        current.release("completed")
        await eventually(done_more_than(waiting, len(order)))  # (its binding write is a thread hop)
        await settle()
        done = [index for index, task in enumerate(waiting) if task.done() and index not in order]
        assert len(done) == 1  # one release, one waiter: no thundering herd
        order += done
        current = waiting[done[0]].result()
    assert order == [0, 1, 2, 3, 4]
    current.release("completed")
    assert_idle(scheduler)


async def test_wait_3_one_release_serves_exactly_one_waiter(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=2)
    scheduler = workspace.scheduler()
    holders = [await workspace.grant(scheduler, group) for _ in range(2)]
    waiting = [workspace.start(scheduler, group) for _ in range(6)]
    await eventually(lambda: scheduler.room.waiting() == 6)
    woken: list[int] = []
    disconnect = signals.lease_acquired.connect(lambda payload: woken.append(payload.account_id))
    try:
        holders[0].release("completed")
        await settle()
    finally:
        disconnect()
    assert woken == [account] and sum(task.done() for task in waiting) == 1
    assert scheduler.room.waiting() == 5 and scheduler.leases.in_flight(account) == 2
    for task in waiting:
        task.cancel()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    for result in results:
        if isinstance(result, Grant):
            result.release("completed")
    holders[1].release("completed")
    assert_idle(scheduler)


async def test_wait_4_waiting_takes_no_slot_but_counts_toward_member_and_workspace(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    scheduler = workspace.scheduler(capacity=3)
    holder = await workspace.grant(scheduler, group, user=1, member_limit=2)
    waiting = workspace.start(scheduler, group, user=1, member_limit=2)
    await eventually(lambda: scheduler.room.waiting() == 1)
    assert scheduler.leases.in_flight(account) == 1  # the waiter holds no slot
    assert scheduler.admission.member_in_use(1) == 2 and scheduler.admission.in_use == 2
    busy = await refused(scheduler, workspace, group, user=1, member_limit=2)
    assert busy.code == "member_busy"
    other = workspace.start(scheduler, group, user=2)
    await eventually(lambda: scheduler.room.waiting() == 2)
    assert (await refused(scheduler, workspace, group, user=3)).code == "workspace_busy"
    holder.release("completed")
    (await asyncio.wait_for(waiting, 2)).release("completed")
    (await asyncio.wait_for(other, 2)).release("completed")
    assert_idle(scheduler)


async def test_wait_5_a_woken_request_does_not_get_an_account_that_became_ineligible(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holders = {grant.account.id: grant for grant in [await workspace.grant(scheduler, group) for _ in "ab"]}
    waiting = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 1)
    await workspace.change(first, enabled=False)  # an admin disables it meanwhile
    holders[first].release("completed")  # the freed slot is handed over, then refused on re-check
    await eventually(lambda: scheduler.leases.in_flight(first) == 0 and scheduler.room.waiting() == 1)
    assert not waiting.done()
    holders[second].release("completed")
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.id == second
    grant.release("completed")
    assert_idle(scheduler)


async def test_wait_5_a_request_whose_key_was_revoked_while_waiting_gives_the_slot_back(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group)
    revoked = False
    base = workspace.eligible(group)

    async def eligible() -> Candidates:  # the gateway re-authenticates the key on every check
        if revoked:
            raise SubLaneError("invalid_api_key")
        return await base()

    doomed = asyncio.ensure_future(scheduler.acquire(workspace.route(group, user=1), eligible))
    await eventually(lambda: scheduler.room.waiting() == 1)
    behind = workspace.start(scheduler, group, user=2)
    await eventually(lambda: scheduler.room.waiting() == 2)
    revoked = True
    holder.release("completed")
    with pytest.raises(SubLaneError) as error:
        await asyncio.wait_for(doomed, 2)
    assert error.value.code == "invalid_api_key"
    grant = await asyncio.wait_for(behind, 2)  # the slot went on to the next waiter
    assert grant.account.id == account and scheduler.leases.in_flight(account) == 1
    grant.release("completed")
    assert_idle(scheduler)


async def test_wait_6_cancelling_a_waiting_request_removes_it_at_once(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group)
    waiting = workspace.start(scheduler, group, member_limit=5)
    await eventually(lambda: scheduler.room.waiting() == 1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert scheduler.room.waiting() == 0 and scheduler.admission.member_in_use(1) == 1
    holder.release("completed")
    assert_idle(scheduler)


@pytest.mark.parametrize("turns", [0, 1])
async def test_wait_6_a_slot_handed_over_at_the_moment_of_cancellation_is_given_back(
    workspace: Workspace, releases: list[signals.LeaseReleased], turns: int
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group)
    cancelled = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 1)
    served = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 2)
    holder.release("completed")
    for _ in range(turns):
        await asyncio.sleep(0)
    assert not cancelled.done()
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    grant = await asyncio.wait_for(served, 2)
    assert grant.account.id == account
    assert [release.outcome for release in releases] == ["completed", "canceled"]
    grant.release("completed")
    assert_idle(scheduler)


async def test_wait_6_shutdown_ends_waiting_requests_at_once(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group)
    waiting = [workspace.start(scheduler, group) for _ in range(3)]
    await eventually(lambda: scheduler.room.waiting() == 3)
    scheduler.room.close()
    results = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 1)
    assert [getattr(result, "code", None) for result in results] == ["shutting_down"] * 3
    assert scheduler.admission.in_use == 1
    holder.release("completed")
    assert_idle(scheduler)


async def test_wait_9_a_cooling_bound_account_is_never_waited_on(workspace: Workspace) -> None:
    group = workspace.group()
    first = workspace.account(group, limit=1)
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    bound = await workspace.grant(scheduler, group, key="thread-1")
    assert bound.account.id == first
    bound.release("completed")
    scheduler.cooldowns.rate_limited(first, 30)
    cooling = await refused(scheduler, workspace, group, key="thread-1")
    assert (cooling.code, cooling.status, cooling.retry_after) == ("account_cooling", 429, 30)
    assert scheduler.room.waiting() == 0
    assert await scheduler.affinity.get(binding_digest(group, "thread-1")) == first  # not moved
    assert_idle(scheduler)


async def test_wait_9_unbound_requests_pick_another_account_at_once(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    scheduler.cooldowns.rate_limited(first, 30)
    grant = await workspace.grant(scheduler, group)
    assert grant.account.id == second and grant.routing["excluded"] == {"cooldown": 1}
    waiting = workspace.start(scheduler, group)  # the other account is full: wait, on it only
    await eventually(lambda: scheduler.room.waiting() == 1)
    assert scheduler.room.waiting(first) == 0 and scheduler.room.waiting(second) == 1
    grant.release("completed")
    (await asyncio.wait_for(waiting, 2)).release("completed")
    scheduler.cooldowns.rate_limited(second, 10)
    cooling = await refused(scheduler, workspace, group)  # every account cooling: the soonest
    assert (cooling.code, cooling.retry_after) == ("account_cooling", 10)
    assert_idle(scheduler)


async def test_wait_9_a_bound_waiter_whose_account_starts_cooling_is_answered_at_once(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    running = await workspace.grant(scheduler, group, key="thread-1")
    assert running.account.id == account
    waiting = workspace.start(scheduler, group, key="thread-1")
    await eventually(lambda: scheduler.room.waiting() == 1)
    scheduler.cooldowns.rate_limited(account, 60)  # the running request met a 429…
    running.release("upstream_error")  # …and its slot is released
    with pytest.raises(SubLaneError) as cooling:
        await asyncio.wait_for(waiting, 1)
    assert cooling.value.code == "account_cooling"
    assert_idle(scheduler)


async def test_wait_9_an_unbound_waiter_leaves_accounts_that_start_cooling(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holders = {grant.account.id: grant for grant in [await workspace.grant(scheduler, group) for _ in "ab"]}
    waiting = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 1)
    scheduler.cooldowns.rate_limited(first, 60)
    holders[first].release("upstream_rate_limited")
    await settle()
    assert not waiting.done()  # still waiting, now for the account that is not cooling only
    assert scheduler.room.waiting(first) == 0 and scheduler.room.waiting(second) == 1
    scheduler.cooldowns.rate_limited(second, 20)
    holders[second].release("upstream_rate_limited")
    with pytest.raises(SubLaneError) as cooling:  # nothing left to wait for
        await asyncio.wait_for(waiting, 1)
    assert (cooling.value.code, cooling.value.retry_after) == ("account_cooling", 20)
    assert_idle(scheduler)


async def test_wait_9_a_waiter_whose_model_starts_cooling_does_not_hold_up_the_queue(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1, models=(MODEL, OTHER_MODEL))
    scheduler = workspace.scheduler()
    running = await workspace.grant(scheduler, group, model=OTHER_MODEL)
    first = workspace.start(scheduler, group, model=MODEL)
    await eventually(lambda: scheduler.room.waiting() == 1)
    second = workspace.start(scheduler, group, model=OTHER_MODEL)
    await eventually(lambda: scheduler.room.waiting() == 2)
    for _ in range(3):  # MODEL fails elsewhere on the account meanwhile: it cools
        scheduler.cooldowns.failed(account, MODEL, scheduler.cooldowns.revision(account))
    running.release("completed")
    with pytest.raises(SubLaneError) as cooling:
        await asyncio.wait_for(first, 1)
    assert cooling.value.code == "model_cooling"
    grant = await asyncio.wait_for(second, 1)  # the free slot went to the next waiter at once
    assert grant.account.id == account
    grant.release("completed")
    assert_idle(scheduler)


# -- AFF -------------------------------------------------------------------------------------------


async def test_aff_2_requests_without_a_conversation_key_never_touch_the_affinity_table(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    workspace.account(group, limit=5)
    workspace.account(group, limit=5)
    scheduler = workspace.scheduler()
    for _ in range(4):
        grant = await workspace.grant(scheduler, group)
        assert grant.bound is False
        grant.release("completed")
    with Session(workspace.engine) as db:
        assert list(db.exec(select(Affinity))) == []


async def test_aff_3_bound_conversation_never_moves_when_full_or_cooling(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=1), workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    bound = await workspace.grant(scheduler, group, key="thread-1")
    assert bound.account.id == first and bound.bound
    waiting = workspace.start(scheduler, group, key="thread-1")  # full: waits, though `second` is free
    await eventually(lambda: scheduler.room.waiting() == 1)
    assert scheduler.room.waiting(second) == 0 and scheduler.leases.in_flight(second) == 0
    bound.release("completed")
    again = await asyncio.wait_for(waiting, 2)
    assert again.account.id == first and again.routing["rule"] == "kept_binding"
    again.release("completed")
    scheduler.cooldowns.rate_limited(first, 120)
    cooling = await refused(scheduler, workspace, group, key="thread-1")
    assert cooling.code == "account_cooling"
    workspace.clock.advance(120)
    probe = await workspace.grant(scheduler, group, key="thread-1")
    assert probe.account.id == first
    probe.release("completed")
    assert scheduler.leases.acquired_total == 3 and scheduler.leases.in_flight(second) == 0
    assert_idle(scheduler)


async def test_aff_3_a_model_cooldown_does_not_move_a_bound_conversation(workspace: Workspace) -> None:
    group = workspace.group()
    first = workspace.account(group, limit=2)
    workspace.account(group, limit=2)
    scheduler = workspace.scheduler()
    bound = await workspace.grant(scheduler, group, key="thread-1")
    assert bound.account.id == first
    bound.release("completed")
    for _ in range(3):
        scheduler.cooldowns.failed(first, MODEL, scheduler.cooldowns.revision(first))
    cooling = await refused(scheduler, workspace, group, key="thread-1")
    assert (cooling.code, cooling.retry_after) == ("model_cooling", 10)
    assert await scheduler.affinity.get(binding_digest(group, "thread-1")) == first
    assert_idle(scheduler)


# A disabled account releases its bindings instead (OPS-5): see the OPS-5 tests below.
@pytest.mark.parametrize("change", [{"auth_state": AUTH_REAUTH_REQUIRED}])
async def test_aff_3_an_unavailable_bound_account_is_an_error_not_a_move(
    workspace: Workspace, change: dict[str, Any]
) -> None:
    group = workspace.group()
    first = workspace.account(group, limit=2)
    workspace.account(group, limit=2)
    scheduler = workspace.scheduler()
    (await workspace.grant(scheduler, group, key="thread-1")).release("completed")
    await workspace.change(first, **change)
    unavailable = await refused(scheduler, workspace, group, key="thread-1")
    assert (unavailable.code, unavailable.status) == ("no_account_available", 503)
    assert await scheduler.affinity.get(binding_digest(group, "thread-1")) == first  # CRED-7
    await workspace.change(first, auth_state=AUTH_OK, enabled=True)
    back = await workspace.grant(scheduler, group, key="thread-1")
    assert back.account.id == first
    back.release("completed")
    assert_idle(scheduler)


async def test_aff_4_model_switch_with_full_history_may_move(workspace: Workspace) -> None:
    group = workspace.group()
    narrow = workspace.account(group, models=(MODEL,))
    wide = workspace.account(group, models=(MODEL, OTHER_MODEL))
    scheduler = workspace.scheduler()
    first = await workspace.grant(scheduler, group, key="thread-1")
    assert first.account.id == narrow
    first.release("completed")
    same = await workspace.grant(scheduler, group, key="thread-1")  # same model: keeps the binding
    assert same.account.id == narrow and same.routing["rule"] == "kept_binding"
    same.release("completed")
    switched = await workspace.grant(scheduler, group, key="thread-1", model=OTHER_MODEL)
    assert switched.account.id == wide and switched.routing["rule"] == "model_switch_rotation"
    switched.release("completed")
    restarted = AffinityStore(workspace.engine, workspace.clock)  # the move was stored
    assert await restarted.get(binding_digest(group, "thread-1")) == wide
    back = await workspace.grant(scheduler, group, key="thread-1")  # and the conversation stays there
    assert back.account.id == wide
    back.release("completed")
    assert_idle(scheduler)


async def test_aff_4_an_upstream_continuation_never_moves(workspace: Workspace) -> None:
    group = workspace.group()
    narrow = workspace.account(group, models=(MODEL,))
    workspace.account(group, models=(MODEL, OTHER_MODEL))
    scheduler = workspace.scheduler()
    (await workspace.grant(scheduler, group, key="thread-1")).release("completed")
    refusal = await refused(scheduler, workspace, group, key="thread-1", model=OTHER_MODEL, continuation=True)
    assert (refusal.code, refusal.status) == ("model_not_found", 404)
    assert await scheduler.affinity.get(binding_digest(group, "thread-1")) == narrow
    assert_idle(scheduler)


async def test_aff_5_new_selections_rotate_across_accounts_and_providers(workspace: Workspace) -> None:
    group = workspace.group()
    accounts = [
        workspace.account(group, provider=provider, limit=5)
        for provider in ("codex", "claude", "antigravity")
    ]
    scheduler = workspace.scheduler()
    served = []
    for _ in range(6):
        grant = await workspace.grant(scheduler, group)
        served.append((grant.account.id, grant.account.provider))
        grant.release("completed")
    assert [account for account, _ in served] == accounts * 2
    assert {provider for _, provider in served} == {"codex", "claude", "antigravity"}
    conversations = [await workspace.grant(scheduler, group, key=f"thread-{index}") for index in range(3)]
    assert sorted(grant.account.id for grant in conversations) == accounts  # new bindings spread too
    for grant in conversations:
        grant.release("completed")
    assert_idle(scheduler)


async def test_aff_5_each_group_has_its_own_cursor(workspace: Workspace) -> None:
    one, two = workspace.group(), workspace.group()
    shared = [workspace.account(one, two, limit=5) for _ in range(3)]
    scheduler = workspace.scheduler()

    async def served(group: int) -> int:
        grant = await workspace.grant(scheduler, group)
        grant.release("completed")
        return grant.account.id

    assert [await served(one) for _ in range(2)] == shared[:2]
    assert [await served(two) for _ in range(3)] == shared  # unaffected by group one's turns
    assert await served(one) == shared[2]


async def test_aff_5_rotation_skips_full_and_cooling_accounts(workspace: Workspace) -> None:
    group = workspace.group()
    first, second, third = (workspace.account(group, limit=1) for _ in range(3))
    scheduler = workspace.scheduler()
    held = await workspace.grant(scheduler, group)
    assert held.account.id == first
    scheduler.cooldowns.rate_limited(second, 60)
    skipped = await workspace.grant(scheduler, group)
    assert skipped.account.id == third
    held.release("completed")
    skipped.release("completed")
    assert (await refused(scheduler, workspace, group, model="gpt-99")).code == "model_not_found"
    assert_idle(scheduler)


async def test_a_group_whose_accounts_are_all_unavailable_is_a_503(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, enabled=False)
    scheduler = workspace.scheduler()
    unavailable = await refused(scheduler, workspace, group)
    assert (unavailable.code, unavailable.status) == ("no_account_available", 503)
    assert (await refused(scheduler, workspace, workspace.group())).code == "model_not_found"
    assert_idle(scheduler)


async def test_aff_7_a_binding_is_kept_by_the_next_process(workspace: Workspace) -> None:
    group = workspace.group()
    accounts = [workspace.account(group, limit=2) for _ in range(3)]
    before = workspace.scheduler()
    (await workspace.grant(before, group)).release("completed")  # move the cursor on
    bound = await workspace.grant(before, group, key="thread-1")
    bound.release("completed")
    assert bound.account.id == accounts[1]
    after = workspace.scheduler()  # a restart: empty cursors, counters and caches
    grants = [await workspace.grant(after, group, key="thread-1") for _ in range(2)]
    assert {grant.account.id for grant in grants} == {accounts[1]}
    for grant in grants:
        grant.release("completed")
    assert_idle(after)


# -- COOL, MCOOL -----------------------------------------------------------------------------------


async def test_cool_3_a_cooling_account_is_refused_with_a_bounded_retry_after(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group)
    scheduler = workspace.scheduler()
    scheduler.cooldowns.rate_limited(account, 3600)
    workspace.clock.advance(0.4)
    assert (await refused(scheduler, workspace, group)).retry_after == pytest.approx(3599.6)
    workspace.clock.advance(3599.4)
    assert (await refused(scheduler, workspace, group)).retry_after == 1  # never below one second
    assert_idle(scheduler)


async def test_cool_4_one_recovery_probe_after_expiry_only_with_nothing_in_flight(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=3)
    scheduler = workspace.scheduler()
    old = await workspace.grant(scheduler, group)
    scheduler.cooldowns.rate_limited(account, 10)
    workspace.clock.advance(10)
    probe_task = workspace.start(scheduler, group)
    follower = workspace.start(scheduler, group)
    await eventually(lambda: scheduler.room.waiting() == 2)  # a request from before is in flight
    assert scheduler.cooldowns.succeeded(account, MODEL, old.revision) is False  # it proves nothing
    old.release("completed")
    probe = await asyncio.wait_for(probe_task, 2)
    await settle()
    assert not follower.done() and scheduler.leases.in_flight(account) == 1  # one probe only
    assert (await refused(scheduler, workspace, group, wait=False)).code == "account_wait_timeout"
    assert scheduler.cooldowns.succeeded(account, MODEL, probe.revision)  # as the gateway wires it:
    scheduler.offer(account)  # a proven account takes its waiters again
    followed = await asyncio.wait_for(follower, 2)
    third = await workspace.grant(scheduler, group, wait=False)  # normal concurrency again
    assert scheduler.leases.in_flight(account) == 3
    for grant in (probe, followed, third):
        grant.release("completed")
    assert_idle(scheduler)


async def test_cool_4_a_failed_probe_cools_the_account_again(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=3)
    scheduler = workspace.scheduler(policy=CooldownPolicy(fallback_s=5))
    scheduler.cooldowns.rate_limited(account, 10)
    workspace.clock.advance(10)
    probe = await workspace.grant(scheduler, group)
    scheduler.cooldowns.failed(account, MODEL, probe.revision)
    probe.release("upstream_error")
    cooling = await refused(scheduler, workspace, group)
    assert (cooling.code, cooling.retry_after) == ("account_cooling", 5)
    workspace.clock.advance(5)
    second_probe = await workspace.grant(scheduler, group)
    assert (await refused(scheduler, workspace, group, wait=False)).code == "account_wait_timeout"
    second_probe.release("completed")
    assert_idle(scheduler)


async def test_cool_5_a_grant_carries_the_revision_at_dispatch(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=3)
    scheduler = workspace.scheduler()
    early = await workspace.grant(scheduler, group)
    scheduler.cooldowns.failed(account, MODEL, early.revision)
    late = await workspace.grant(scheduler, group)
    assert late.revision > early.revision == 0
    assert scheduler.cooldowns.succeeded(account, MODEL, early.revision) is False
    assert scheduler.cooldowns.succeeded(account, MODEL, late.revision) is True
    early.release("completed")
    late.release("completed")
    assert_idle(scheduler)


async def test_cool_6_clear_lets_the_account_serve_again_at_full_concurrency(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=2)
    scheduler = workspace.scheduler()
    scheduler.cooldowns.rate_limited(account, 600)
    assert (await refused(scheduler, workspace, group)).code == "account_cooling"
    before = scheduler.cooldowns.revision(account)
    scheduler.cooldowns.clear(account)
    grants = [await workspace.grant(scheduler, group, wait=False) for _ in range(2)]  # no probe stage
    assert all(grant.revision > before for grant in grants)
    for grant in grants:
        grant.release("completed")
    assert_idle(scheduler)


async def test_mcool_3_other_models_stay_eligible_and_mcool_4_model_cooling(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=2, models=(MODEL, OTHER_MODEL))
    scheduler = workspace.scheduler()
    for _ in range(3):
        scheduler.cooldowns.failed(account, MODEL, scheduler.cooldowns.revision(account))
    cooling = await refused(scheduler, workspace, group)
    assert (cooling.code, cooling.status, cooling.retry_after) == ("model_cooling", 429, 10)
    other = await workspace.grant(scheduler, group, model=OTHER_MODEL)
    assert other.account.id == account
    other.release("completed")
    scheduler.cooldowns.model_limited(account, OTHER_MODEL, 30, "provider:model_capacity")
    limited = await refused(scheduler, workspace, group, model=OTHER_MODEL)
    assert (limited.code, limited.retry_after) == ("model_cooling", 30)  # AGL-3: held here
    assert_idle(scheduler)


async def test_mcool_3_a_cooled_model_recovers_while_other_models_are_busy(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=3, models=(MODEL, OTHER_MODEL))
    scheduler = workspace.scheduler()
    busy = await workspace.grant(scheduler, group, model=OTHER_MODEL)  # a long stream of another model
    for _ in range(3):
        scheduler.cooldowns.failed(account, MODEL, scheduler.cooldowns.revision(account))
    workspace.clock.advance(10)
    probe = await workspace.grant(scheduler, group, wait=False)  # the model's recovery request
    second = await refused(scheduler, workspace, group, wait=False)  # one at a time
    assert second.code == "account_wait_timeout"
    more = await workspace.grant(scheduler, group, model=OTHER_MODEL, wait=False)  # others unaffected
    assert scheduler.cooldowns.succeeded(account, MODEL, probe.revision)
    for grant in (busy, probe, more):
        grant.release("completed")
    grants = [await workspace.grant(scheduler, group, wait=False) for _ in range(3)]
    for grant in grants:
        grant.release("completed")
    assert_idle(scheduler)


async def test_mcool_2_threshold_0_keeps_a_failing_model_eligible(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=2)
    scheduler = workspace.scheduler(policy=CooldownPolicy(model_threshold=0))
    for _ in range(10):
        grant = await workspace.grant(scheduler, group)
        scheduler.cooldowns.failed(account, MODEL, grant.revision)
        grant.release("upstream_error")
    assert_idle(scheduler)


# -- OPS-5, AFF-8: bindings of accounts that left, accounts whose refresh backs off ------------------


async def test_ops_5_a_binding_to_an_account_that_left_the_group_is_released(workspace: Workspace) -> None:
    # Found by probing: such a conversation was stuck with a misleading 404 model_not_found.
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    bound = await workspace.grant(scheduler, group, key="thread-1")
    bound.release("completed")
    moved_from = bound.account.id
    await workspace.leave_group(moved_from, group)
    again = await workspace.grant(scheduler, group, key="thread-1")
    assert again.account.id == ({first, second} - {moved_from}).pop()
    assert again.routing["rule"] == "binding_released"
    again.release("completed")
    assert await scheduler.affinity.get(binding_digest(group, "thread-1")) == again.account.id
    kept = await workspace.grant(scheduler, group, key="thread-1")  # bound to the new account now
    assert kept.account.id == again.account.id and kept.routing["rule"] == "kept_binding"
    kept.release("completed")
    assert_idle(scheduler)


async def test_ops_5_a_binding_to_a_disabled_account_is_released(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    bound = await workspace.grant(scheduler, group, key="thread-1")
    bound.release("completed")
    await workspace.change(bound.account.id, enabled=False)
    again = await workspace.grant(scheduler, group, key="thread-1")
    assert again.account.id != bound.account.id and again.routing["rule"] == "binding_released"
    again.release("completed")
    assert {first, second} == {bound.account.id, again.account.id}
    assert_idle(scheduler)


async def test_aff_8_accounts_in_refresh_backoff_are_passed_over_for_new_selection(
    workspace: Workspace,
) -> None:
    # Found by probing: unbound calls went to a backing-off account (503) while a healthy one idled.
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    workspace.backing_off[first] = workspace.clock.time() + 60
    scheduler = workspace.scheduler()
    for _ in range(4):
        grant = await workspace.grant(scheduler, group)
        assert grant.account.id == second and grant.routing["excluded"]["refresh_backoff"] == 1
        grant.release("completed")
    # OPS-5: nothing else left, and still no backing-off account is chosen anew: 503 with the
    # earliest retry as the hint
    workspace.backing_off[second] = workspace.clock.time() + 30
    error = await refused(scheduler, workspace, group)
    assert (error.code, error.status, error.retry_after) == ("account_refresh_failed", 503, 30)
    assert error.routing is not None and error.routing["excluded"]["refresh_backoff"] == 2
    assert_idle(scheduler)


async def test_ops_5_a_bound_conversation_stays_on_its_backing_off_account(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group, key="conversation")
    bound = grant.account.id
    grant.release("completed")
    workspace.backing_off[bound] = workspace.clock.time() + 60
    again = await workspace.grant(scheduler, group, key="conversation")
    assert again.account.id == bound  # CRED-7: bound conversations stay bound during recovery
    again.release("completed")
    assert {first, second} - {bound}
    assert_idle(scheduler)
