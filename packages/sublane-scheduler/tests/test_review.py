"""Codex auto-review parents (REVIEW-1…3): a review child prefers its parent conversation's account,
within the same user and group and subject to every eligibility check; its own binding wins; the
parent's binding is never changed."""

from __future__ import annotations

from scheduler_harness import Workspace

from sublane_scheduler import binding_digest


async def _parent(workspace: Workspace, scheduler: object, group: int, *, user: int = 1) -> int:
    grant = await workspace.grant(scheduler, group, key="parent-thread", user=user)  # type: ignore[arg-type]
    grant.release("success")
    return grant.account.id


async def test_review_1_a_review_child_prefers_its_parents_account(workspace: Workspace) -> None:
    group = workspace.group()
    for _ in range(3):
        workspace.account(group, limit=10)
    scheduler = workspace.scheduler()
    parent = await _parent(workspace, scheduler, group)
    for index in range(4):  # rotation would spread these; parent preference keeps them together
        child = await workspace.grant(scheduler, group, key=f"child-{index}", parent_key="parent-thread")
        assert child.account.id == parent and child.routing["rule"] == "parent_preference"
        child.release("success")


async def test_review_1_only_the_same_users_parent_is_searched(workspace: Workspace) -> None:
    group = workspace.group()
    for _ in range(2):
        workspace.account(group, limit=10)
    scheduler = workspace.scheduler()
    await _parent(workspace, scheduler, group, user=1)
    child = await workspace.grant(scheduler, group, key="child", parent_key="parent-thread", user=2)
    assert child.routing["rule"] == "uniform_rotation" and child.routing["parent"] == "unknown"
    other_group = workspace.group()
    workspace.account(other_group, limit=10)
    elsewhere = await workspace.grant(scheduler, other_group, key="c2", parent_key="parent-thread")
    assert elsewhere.routing["rule"] == "uniform_rotation"  # the digest holds the group


async def test_review_2_the_childs_own_binding_wins(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=10), workspace.account(group, limit=10)
    scheduler = workspace.scheduler()
    child = await workspace.grant(scheduler, group, key="child")
    child.release("success")
    await _parent(workspace, scheduler, group)  # bound to the other account by rotation
    again = await workspace.grant(scheduler, group, key="child", parent_key="parent-thread")
    assert again.account.id == child.account.id and again.routing["rule"] == "kept_binding"
    assert {first, second} == {
        child.account.id,
        await scheduler.affinity.get(binding_digest(group, "parent-thread")),
    }


async def test_review_2_the_parents_account_must_still_pass_quota_and_capacity(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group, limit=1)
    workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    parent = await _parent(workspace, scheduler, group)
    workspace.exhausted[parent] = workspace.clock.time() + 60
    child = await workspace.grant(scheduler, group, key="c1", parent_key="parent-thread")
    assert child.account.id != parent and child.routing["parent"] == "unavailable"
    child.release("success")
    del workspace.exhausted[parent]
    holder = await workspace.grant(scheduler, group, key="parent-thread")  # the parent's slot is taken
    busy = await workspace.grant(scheduler, group, key="c2", parent_key="parent-thread")
    assert busy.account.id != parent and busy.routing["parent"] == "busy"  # not waited for
    holder.release("success")


async def test_review_3_missing_parent_data_means_normal_selection_and_the_parent_binding_stays(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    for _ in range(2):
        workspace.account(group, limit=10)
    scheduler = workspace.scheduler()
    orphan = await workspace.grant(scheduler, group, key="orphan", parent_key="never-seen")
    assert orphan.routing["rule"] == "uniform_rotation" and orphan.routing["parent"] == "unknown"
    parent = await _parent(workspace, scheduler, group)
    workspace.exhausted[parent] = workspace.clock.time() + 60
    await workspace.grant(scheduler, group, key="child", parent_key="parent-thread")
    assert await scheduler.affinity.get(binding_digest(group, "parent-thread")) == parent
