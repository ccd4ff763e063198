"""``Scheduler.move``: failover before the first byte (FAIL-1, FAIL-2), over a real SQLite workspace.

Only the clock is fake. One logical request keeps one admission ticket across its attempts and
holds one lease at a time; the accounts it tried are never candidates again; a binding it made on a
failed account is taken back.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from scheduler_harness import MODEL, Workspace

from sublane_core import SubLaneError
from sublane_scheduler import Grant, Scheduler, binding_digest


async def _move(workspace: Workspace, scheduler: Scheduler, failed: Grant, group: int, **extra: Any) -> Grant:
    request = workspace.route(group, **extra)
    tried = frozenset({failed.account.id})
    return await scheduler.move(
        failed, dataclasses.replace(request, exclude=tried), workspace.eligible(group)
    )


async def test_fail_1_a_move_takes_another_account_under_the_same_ticket(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group, member_limit=1, rpm=1)
    assert grant.account.id == first and grant.may_fail_over
    moved = await _move(workspace, scheduler, grant, group, member_limit=1, rpm=1)
    assert moved.account.id == second
    assert moved.ticket is grant.ticket  # admitted once: the RPM allowance of 1 was enough
    assert moved.routing["excluded"] == {"tried": 1}
    assert scheduler.leases.in_flight(first) == 0 and scheduler.leases.in_flight(second) == 1
    assert scheduler.admission.member_in_use(1) == 1
    moved.release("completed")
    grant.release("error")  # the failed grant's second release changes nothing
    assert scheduler.leases.total_in_flight() == 0 and scheduler.admission.in_use == 0
    assert scheduler.leases.acquired_total == scheduler.leases.released_total == 2


async def test_fail_1_no_account_left_closes_the_ticket_and_refuses(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group)
    with pytest.raises(SubLaneError) as refused:
        await _move(workspace, scheduler, grant, group)
    assert refused.value.code == "model_not_found"
    assert refused.value.routing is not None and refused.value.routing["excluded"] == {"tried": 1}
    assert scheduler.leases.total_in_flight() == 0 and scheduler.admission.in_use == 0


async def test_fail_2_a_new_conversation_binds_where_it_is_answered(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group, key="thread")
    digest = binding_digest(group, "thread")
    assert grant.made_binding == digest and await scheduler.affinity.get(digest) == first
    moved = await _move(workspace, scheduler, grant, group, key="thread")
    assert moved.account.id == second and moved.made_binding == digest
    assert await scheduler.affinity.get(digest) == second
    assert grant.made_binding is None  # taken back
    await scheduler.forget_binding(moved)  # the second failed too: nothing stays bound
    assert await scheduler.affinity.get(digest) is None
    moved.release("error")


async def test_fail_2_a_kept_binding_never_may_fail_over(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group)
    workspace.account(group)
    scheduler = workspace.scheduler()
    first = await workspace.grant(scheduler, group, key="thread")
    first.release("completed")
    again = await workspace.grant(scheduler, group, key="thread")
    assert again.routing["rule"] == "kept_binding" and again.made_binding is None
    assert not again.may_fail_over
    again.release("completed")


async def test_fail_2_taking_back_a_binding_spares_one_that_moved_meanwhile(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group, key="thread")
    digest = binding_digest(group, "thread")
    await scheduler.affinity.bind(digest, group, second, MODEL)  # another request of it, elsewhere
    await scheduler.forget_binding(grant)
    assert await scheduler.affinity.get(digest) == second
    assert grant.account.id == first
    grant.release("error")
