"""Selection with subscription quota: exclusion of new selections (QUOTA-3), the bound conversation's
``quota_exhausted`` (QUOTA-7), no change for low quota (QUOTA-5), quota-weighted rotation (QW-1/2),
and the re-checks after a wait (WAIT-5) and before a retry (RETRY-2).

The workspace plays the gateway: its ``exhausted`` and ``remaining`` maps are what the quota
observer would answer through the scheduler's ``SubscriptionQuota`` interface.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from scheduler_harness import Workspace, eventually

from sublane_core import SubLaneError
from sublane_scheduler import Eligibility


async def test_quota_3_an_exhausted_account_is_not_selected_for_new_conversations(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    exhausted, other = workspace.account(group, limit=50), workspace.account(group, limit=50)
    workspace.exhausted[exhausted] = workspace.clock.time() + 120
    scheduler = workspace.scheduler()
    grants = [await workspace.grant(scheduler, group, key=f"new-{i}") for i in range(10)]
    assert {grant.account.id for grant in grants} == {other}
    assert grants[0].routing["excluded"] == {"quota": 1}
    assert grants[0].routing["rule"] == "uniform_rotation"


async def test_quota_7_a_bound_conversation_gets_quota_exhausted_and_never_moves(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    first, second = workspace.account(group), workspace.account(group)
    scheduler = workspace.scheduler()
    grant = await workspace.grant(scheduler, group, key="conv")
    bound = grant.account.id
    grant.release("success")
    revision = scheduler.cooldowns.revision(bound)
    workspace.exhausted[bound] = workspace.clock.time() + 75.4
    with pytest.raises(SubLaneError) as raised:
        await workspace.grant(scheduler, group, key="conv")
    assert raised.value.code == "quota_exhausted" and raised.value.status == 403
    assert raised.value.retry_after == pytest.approx(75.4)
    assert scheduler.cooldowns.revision(bound) == revision  # no failure counted
    assert scheduler.cooldowns.active(bound) is None
    assert await scheduler.affinity.get(_digest(group, "conv")) == bound  # still bound
    del workspace.exhausted[bound]
    again = await workspace.grant(scheduler, group, key="conv")
    assert again.account.id == bound and {first, second} >= {bound}


async def test_quota_7_the_hint_is_bounded_by_the_next_check(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group)
    scheduler = workspace.scheduler()
    workspace.exhausted[account] = workspace.clock.time() + 0.2
    with pytest.raises(SubLaneError) as raised:
        await workspace.grant(scheduler, group)
    assert raised.value.code == "quota_exhausted" and raised.value.retry_after == 1.0


async def test_quota_7_when_every_account_is_exhausted_a_new_request_gets_quota_exhausted(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    for until in (300, 90):
        workspace.exhausted[workspace.account(group)] = workspace.clock.time() + until
    scheduler = workspace.scheduler()
    with pytest.raises(SubLaneError) as raised:
        await workspace.grant(scheduler, group)
    assert raised.value.code == "quota_exhausted" and raised.value.retry_after == pytest.approx(90)


async def test_quota_5_low_but_positive_quota_does_not_change_uniform_rotation(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    low, full = workspace.account(group, limit=50), workspace.account(group, limit=50)
    workspace.remaining = None  # QW off: the observer's numbers are not asked for
    scheduler = workspace.scheduler()
    chosen = Counter([(await workspace.grant(scheduler, group)).account.id for _ in range(40)])
    assert chosen == {low: 20, full: 20}


async def test_qw_1_new_conversations_follow_the_remaining_quota(workspace: Workspace) -> None:
    group = workspace.group()
    accounts = [workspace.account(group, limit=1000) for _ in range(3)]
    workspace.remaining = dict(zip(accounts, (0.6, 0.3, 0.1), strict=True))
    scheduler = workspace.scheduler()
    chosen = Counter()
    for i in range(1000):
        grant = await workspace.grant(scheduler, group, key=f"c{i}")
        chosen[grant.account.id] += 1
        grant.release("success")
    # A smooth weighted round-robin: within one selection of the exact share.
    for account, share in zip(accounts, (0.6, 0.3, 0.1), strict=True):
        assert abs(chosen[account] - 1000 * share) <= 1
    assert grant.routing["rule"] == "quota_weighted_rotation"


async def test_qw_1_a_full_account_is_passed_over_for_the_next_best_credit(workspace: Workspace) -> None:
    group = workspace.group()
    big, small = workspace.account(group, limit=1), workspace.account(group, limit=5)
    workspace.remaining = {big: 0.9, small: 0.1}
    scheduler = workspace.scheduler()
    held = await workspace.grant(scheduler, group)
    assert held.account.id == big
    assert (await workspace.grant(scheduler, group)).account.id == small  # big is full


@pytest.mark.parametrize("case", ["incomplete", "mixed_providers"])
async def test_qw_2_otherwise_rotation_stays_uniform(workspace: Workspace, case: str) -> None:
    group = workspace.group()
    first = workspace.account(group, limit=50)
    second = workspace.account(group, limit=50, provider="claude" if case == "mixed_providers" else "codex")
    workspace.remaining = {first: 0.9} if case == "incomplete" else {first: 0.9, second: 0.1}
    scheduler = workspace.scheduler()
    grants = [await workspace.grant(scheduler, group) for _ in range(20)]
    assert Counter(g.account.id for g in grants) == {first: 10, second: 10}
    assert {g.routing["rule"] for g in grants} == {"uniform_rotation"}


async def test_qw_2_existing_bindings_come_first(workspace: Workspace) -> None:
    group = workspace.group()
    first, second = workspace.account(group, limit=50), workspace.account(group, limit=50)
    scheduler = workspace.scheduler()
    bound = (await workspace.grant(scheduler, group, key="conv")).account.id
    workspace.remaining = {first: 0.01, second: 0.01, bound: 0.0001}
    workspace.remaining[first if bound == second else second] = 1.0
    for _ in range(5):
        grant = await workspace.grant(scheduler, group, key="conv")
        assert grant.account.id == bound and grant.routing["rule"] == "kept_binding"


async def test_wait_5_a_woken_request_rechecks_quota(workspace: Workspace) -> None:
    group = workspace.group()
    account = workspace.account(group, limit=1)
    scheduler = workspace.scheduler()
    holder = await workspace.grant(scheduler, group, key="conv")
    waiting = workspace.start(scheduler, group, key="conv")
    await eventually(lambda: scheduler.room.waiting(account) == 1)
    workspace.exhausted[account] = workspace.clock.time() + 60
    holder.release("success")
    with pytest.raises(SubLaneError) as raised:
        await asyncio.wait_for(waiting, 5)
    assert raised.value.code == "quota_exhausted"
    assert scheduler.leases.in_flight(account) == 0  # the slot it had taken went back


class _Quota:
    """The workspace's ``exhausted`` map, through the scheduler's ``SubscriptionQuota`` interface."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.demanded: list[int] = []

    def exhausted_until(self, account_id: int, model: str) -> float | None:
        return self.workspace.exhausted.get(account_id)

    def remaining(self, account_id: int, model: str) -> float | None:
        return None

    def demand(self, account_id: int, provider: str, lifecycle_revision: int) -> None:
        self.demanded.append(account_id)


class _Models:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def ready(self, account_id: int, provider: str) -> frozenset[str] | None:
        return frozenset(self.workspace.models.get(account_id, ()))

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]:
        return frozenset(self.workspace.models.get(account_id, ()))


class _Health:
    def needs_reauth(self, account_id: int) -> bool:
        return False

    def refresh_retry_at(self, account_id: int) -> float | None:
        return None


async def test_retry_2_and_quota_1_eligibility_asks_the_quota_interface(workspace: Workspace) -> None:
    group = workspace.group()
    exhausted, other = workspace.account(group), workspace.account(group)
    quota = _Quota(workspace)
    scheduler = workspace.scheduler()
    scheduler.eligibility = Eligibility(workspace.directory, _Models(workspace), _Health(), quota)
    grant = await scheduler.route(workspace.route(group), _accept)
    assert sorted(quota.demanded) == [exhausted, other]  # QUOTA-1: traffic asks for fresh quota
    workspace.exhausted[grant.account.id] = workspace.clock.time() + 30
    with pytest.raises(SubLaneError) as raised:  # RETRY-2: the same lease, checked again
        scheduler.check_dispatch(grant.account.id, "gpt-5")
    assert raised.value.code == "quota_exhausted"
    scheduler.cooldowns.rate_limited(other, 20)
    with pytest.raises(SubLaneError) as cooling:
        scheduler.check_dispatch(other, "gpt-5")
    assert cooling.value.code == "account_cooling"


async def _accept() -> None:
    return None


def _digest(group: int, key: str) -> str:
    from sublane_scheduler import binding_digest

    return binding_digest(group, key)


async def test_hist_12_a_request_refused_during_routing_carries_its_explanation(workspace: Workspace) -> None:
    group = workspace.group()
    bound = workspace.account(group)
    workspace.account(group, models=("other-model",))
    scheduler = workspace.scheduler()
    (await workspace.grant(scheduler, group, key="conv")).release("success")
    workspace.exhausted[bound] = workspace.clock.time() + 60
    with pytest.raises(SubLaneError) as raised:
        await workspace.grant(scheduler, group, key="conv")
    assert raised.value.routing == {
        "excluded": {"model_support": 1, "quota": 1},
        "rule": "kept_binding",
        "candidates": 1,
        "refused": "quota_exhausted",
    }


async def test_hist_12_a_policy_refusal_during_routing_counts_the_groups_accounts(
    workspace: Workspace,
) -> None:
    group = workspace.group()
    for _ in range(3):
        workspace.account(group)
    scheduler = workspace.scheduler()
    scheduler.eligibility = Eligibility(workspace.directory, _Models(workspace), _Health(), _Quota(workspace))

    async def policy_changed() -> None:
        raise SubLaneError("model_not_allowed")

    with pytest.raises(SubLaneError) as raised:
        await scheduler.route(workspace.route(group), policy_changed)
    assert raised.value.routing == {
        "excluded": {"policy": 3},
        "rule": "none",
        "candidates": 0,
        "refused": "model_not_allowed",
    }
