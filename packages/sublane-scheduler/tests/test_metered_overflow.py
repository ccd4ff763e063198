"""PAID-2: metered accounts in selection — ``overflow`` (only when no subscription account can take
the call now, or once it waited ``overflow_after_s``), ``normal`` (ordinary members), ``off``
(never) — and PAID-3's hook: the spend caps are asked only when a metered account would serve.

The scheduler is the real one with the package's real :class:`Eligibility`, over a real SQLite
file; only the clock and the catalogue/health/quota answers are the workspace's.
"""

from __future__ import annotations

import asyncio

import pytest
from scheduler_harness import METERED, MODEL, OTHER_MODEL, Workspace, settle

from sublane_core import Billing, MeteredRouting, SubLaneError
from sublane_scheduler import Grant, RouteRequest, Scheduler


class Spend:
    """A small :class:`~sublane_scheduler.MeteredSpend`: what it answers, and who asked."""

    def __init__(self, answer: tuple[str, float | None] | None = None) -> None:
        self.answer = answer
        self.asked: list[tuple[int, int, str]] = []

    def blocked(self, group_id: int, user_id: int, model: str) -> tuple[str, float | None] | None:
        self.asked.append((group_id, user_id, model))
        return self.answer


async def _nothing() -> None:
    return None


def _scheduler(workspace: Workspace, spend: Spend | None = None, **options: float) -> Scheduler:
    return workspace.scheduler(eligibility=workspace.eligibility(spend), **options)  # type: ignore[arg-type]


async def _route(scheduler: Scheduler, request: RouteRequest) -> Grant:
    return await scheduler.route(request, _nothing)


async def _refusal(scheduler: Scheduler, request: RouteRequest) -> SubLaneError:
    with pytest.raises(SubLaneError) as caught:
        await _route(scheduler, request)
    return caught.value


async def _pool(
    workspace: Workspace, routing: MeteredRouting = MeteredRouting.OVERFLOW, **options: float
) -> tuple[int, int, int]:
    """A group with one subscription account (limit 1) and one metered account (limit 2)."""
    group = workspace.group()
    subscription = workspace.account(group, limit=1)
    metered = workspace.account(group, provider=METERED, limit=2)
    await workspace.meter(group, routing, **options)
    return group, subscription, metered


async def test_paid_2_accounts_know_their_billing_and_only_groups_with_metered_accounts_have_metering(
    workspace: Workspace,
) -> None:
    plain = workspace.group()
    workspace.account(plain)
    group, subscription, metered = await _pool(workspace, MeteredRouting.NORMAL, overflow_after_s=2)
    directory = workspace.directory
    assert directory.get(subscription).billing is Billing.SUBSCRIPTION  # type: ignore[union-attr]
    assert directory.get(metered).billing is Billing.METERED  # type: ignore[union-attr]
    assert plain not in directory.metering  # the subscription-only path asks nothing more
    assert directory.metering[group].routing is MeteredRouting.NORMAL
    assert directory.metering[group].overflow_after_s == 2


async def test_paid_2_overflow_holds_metered_accounts_back_while_a_subscription_account_can_serve(
    workspace: Workspace,
) -> None:
    group, subscription, _ = await _pool(workspace)
    spend = Spend()
    scheduler = _scheduler(workspace, spend)
    grant = await _route(scheduler, workspace.route(group))
    assert grant.account.id == subscription
    assert "metered" not in grant.routing and "overflow_reason" not in grant.routing
    assert grant.routing["excluded"]["metered_held"] == 1
    assert spend.asked == []  # PAID-3's caps are not asked while no metered account would serve
    grant.release("completed")


@pytest.mark.parametrize(
    ("make_unavailable", "reason"),
    [
        ("cooling", "all_cooling"),
        ("model_cooling", "all_cooling"),
        ("quota", "all_out_of_quota"),
        ("backoff", "all_refresh_backoff"),
        ("disabled", "all_unavailable"),
        ("unauthorized", "all_unavailable"),
    ],
)
async def test_paid_2_overflow_serves_when_no_subscription_account_can_take_the_call(
    workspace: Workspace, make_unavailable: str, reason: str
) -> None:
    group, subscription, metered = await _pool(workspace)
    spend = Spend()
    scheduler = _scheduler(workspace, spend)
    if make_unavailable == "cooling":
        scheduler.cooldowns.rate_limited(subscription, 60)
    elif make_unavailable == "model_cooling":
        scheduler.cooldowns.model_limited(subscription, MODEL, 60, "test")
    elif make_unavailable == "quota":
        workspace.exhausted[subscription] = workspace.clock.time() + 600
    elif make_unavailable == "backoff":
        workspace.backing_off[subscription] = workspace.clock.time() + 600
    elif make_unavailable == "disabled":
        await workspace.change(subscription, enabled=False)
    else:
        workspace.reauth.add(subscription)
    grant = await _route(scheduler, workspace.route(group, user=7))
    assert grant.account.id == metered
    assert grant.routing["metered"] is True
    assert grant.routing["overflow_reason"] == reason
    assert spend.asked == [(group, 7, MODEL)]
    grant.release("completed")


async def test_paid_2_overflow_reasons_mixed_and_no_subscription(workspace: Workspace) -> None:
    group, subscription, metered = await _pool(workspace)
    other = workspace.account(group, limit=1)
    scheduler = _scheduler(workspace)
    scheduler.cooldowns.rate_limited(subscription, 60)
    workspace.exhausted[other] = workspace.clock.time() + 600
    grant = await _route(scheduler, workspace.route(group))
    assert (grant.account.id, grant.routing["overflow_reason"]) == (metered, "all_unavailable")
    grant.release("completed")
    # no subscription account of the group lists the model: the metered one serves it
    workspace.models[metered].add(OTHER_MODEL)
    grant = await _route(scheduler, workspace.route(group, model=OTHER_MODEL))
    assert (grant.account.id, grant.routing["overflow_reason"]) == (metered, "no_subscription")
    grant.release("completed")


async def test_paid_2_a_call_that_waited_overflow_after_s_is_offered_metered_accounts_then(
    workspace: Workspace,
) -> None:
    group, subscription, metered = await _pool(workspace, overflow_after_s=0.2)
    scheduler = _scheduler(workspace)
    first = await _route(scheduler, workspace.route(group))
    assert first.account.id == subscription
    waiting = asyncio.ensure_future(_route(scheduler, workspace.route(group)))
    await settle()
    assert scheduler.room.waiting(subscription) == 1
    assert scheduler.room.waiting(metered) == 0  # it waits for the subscription, not the metered one
    workspace.clock.advance(0.2)
    await asyncio.sleep(0.05)
    assert not waiting.done()  # woken by its own timer at the overflow moment, not before
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.id == metered
    assert grant.routing["metered"] is True and grant.routing["overflow_reason"] == "waited"
    assert scheduler.room.waiting() == 0
    for held in (first, grant):
        held.release("completed")


async def test_paid_2_a_slot_freed_before_the_overflow_moment_goes_to_the_waiter(
    workspace: Workspace,
) -> None:
    group, subscription, _ = await _pool(workspace, overflow_after_s=30)
    scheduler = _scheduler(workspace)
    first = await _route(scheduler, workspace.route(group))
    waiting = asyncio.ensure_future(_route(scheduler, workspace.route(group)))
    await settle()
    first.release("completed")
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.id == subscription and "metered" not in grant.routing
    grant.release("completed")


async def test_paid_2_normal_routing_makes_metered_accounts_ordinary_members(workspace: Workspace) -> None:
    group, subscription, metered = await _pool(workspace, MeteredRouting.NORMAL)
    scheduler = _scheduler(workspace)
    grants = [await _route(scheduler, workspace.route(group)) for _ in range(2)]
    assert {grant.account.id for grant in grants} == {subscription, metered}
    served = next(grant for grant in grants if grant.account.id == metered)
    assert served.routing["metered"] is True and served.routing["overflow_reason"] == "normal"
    for grant in grants:
        grant.release("completed")


async def test_paid_2_off_never_uses_metered_accounts(workspace: Workspace) -> None:
    group, subscription, _ = await _pool(workspace, MeteredRouting.OFF)
    spend = Spend()
    scheduler = _scheduler(workspace, spend)
    scheduler.cooldowns.rate_limited(subscription, 60)
    error = await _refusal(scheduler, workspace.route(group))
    assert error.code == "account_cooling"
    assert error.routing is not None and error.routing["excluded"]["metered_off"] == 1
    assert spend.asked == []


async def test_paid_2_a_conversation_bound_to_a_metered_account_stays_when_subscriptions_recover(
    workspace: Workspace,
) -> None:
    group, subscription, metered = await _pool(workspace)
    scheduler = _scheduler(workspace)
    scheduler.cooldowns.rate_limited(subscription, 5)
    grant = await _route(scheduler, workspace.route(group, key="conversation"))
    assert (grant.account.id, grant.routing["overflow_reason"]) == (metered, "all_cooling")
    grant.release("completed")
    workspace.clock.advance(10)  # the subscription account recovered
    grant = await _route(scheduler, workspace.route(group, key="conversation"))
    assert grant.account.id == metered  # AFF-3: the binding holds (its upstream cache is there)
    assert grant.routing["rule"] == "kept_binding"
    assert grant.routing["metered"] is True and grant.routing["overflow_reason"] == "bound"
    grant.release("completed")
    fresh = await _route(scheduler, workspace.route(group, key="another"))
    assert fresh.account.id == subscription  # a new conversation goes to the subscription
    fresh.release("completed")


async def test_paid_2_off_releases_a_binding_to_a_metered_account(workspace: Workspace) -> None:
    group, subscription, metered = await _pool(workspace)
    scheduler = _scheduler(workspace)
    scheduler.cooldowns.rate_limited(subscription, 5)
    grant = await _route(scheduler, workspace.route(group, key="conversation"))
    assert grant.account.id == metered
    grant.release("completed")
    workspace.clock.advance(10)
    await workspace.meter(group, MeteredRouting.OFF)
    grant = await _route(scheduler, workspace.route(group, key="conversation"))
    assert grant.account.id == subscription and grant.routing["rule"] == "binding_released"
    grant.release("completed")


async def test_paid_3_hook_spend_is_never_asked_on_a_subscription_only_group(workspace: Workspace) -> None:
    group = workspace.group()
    workspace.account(group)
    spend = Spend(("metered_budget_exhausted", workspace.clock.time() + 3600))
    scheduler = _scheduler(workspace, spend)
    grant = await _route(scheduler, workspace.route(group))
    grant.release("completed")
    assert spend.asked == []


async def test_paid_3_hook_a_spent_budget_refuses_with_the_reset_when_nothing_else_can_serve(
    workspace: Workspace,
) -> None:
    group, subscription, _ = await _pool(workspace)
    reset = workspace.clock.time() + 3600
    spend = Spend(("metered_budget_exhausted", reset))
    scheduler = _scheduler(workspace, spend)
    scheduler.cooldowns.rate_limited(subscription, 60)
    error = await _refusal(scheduler, workspace.route(group))
    assert (error.code, error.status, error.retry_after) == ("metered_budget_exhausted", 429, 3600)
    assert error.headers["x-metered-budget-reset"] == str(int(reset))  # Unix seconds, as TEAM-4's
    assert error.routing is not None and error.routing["excluded"]["metered_budget"] == 1
    assert error.routing["excluded"]["cooldown"] == 1


async def test_paid_3_hook_an_unpriced_model_is_400_when_only_metered_accounts_could_serve(
    workspace: Workspace,
) -> None:
    group, subscription, _ = await _pool(workspace, MeteredRouting.NORMAL)
    spend = Spend(("unpriced_model", None))
    scheduler = _scheduler(workspace, spend)
    grant = await _route(scheduler, workspace.route(group))  # the subscription account serves
    assert grant.account.id == subscription and grant.routing["excluded"]["unpriced"] == 1
    grant.release("completed")
    scheduler.cooldowns.rate_limited(subscription, 60)
    error = await _refusal(scheduler, workspace.route(group))
    assert (error.code, error.status) == ("unpriced_model", 400)
    assert error.routing is not None and error.routing["excluded"]["unpriced"] == 1


async def test_paid_3_hook_a_spent_budget_keeps_a_waiting_call_on_the_subscriptions(
    workspace: Workspace,
) -> None:
    group, subscription, _ = await _pool(workspace, overflow_after_s=0.05)
    spend = Spend(("metered_budget_exhausted", workspace.clock.time() + 3600))
    scheduler = _scheduler(workspace, spend)
    first = await _route(scheduler, workspace.route(group))
    waiting = asyncio.ensure_future(_route(scheduler, workspace.route(group)))
    await settle()
    workspace.clock.advance(0.05)
    for _ in range(100):  # the overflow moment passes: the caps refuse, it keeps waiting
        if spend.asked:
            break
        await asyncio.sleep(0.01)
    await settle()
    assert spend.asked and not waiting.done()
    first.release("completed")
    grant = await asyncio.wait_for(waiting, 2)
    assert grant.account.id == subscription and grant.routing["excluded"]["metered_budget"] == 1
    grant.release("completed")


async def test_paid_3_hook_a_conversation_bound_to_a_metered_account_hears_the_budget(
    workspace: Workspace,
) -> None:
    group, subscription, metered = await _pool(workspace)
    spend = Spend()
    scheduler = _scheduler(workspace, spend)
    scheduler.cooldowns.rate_limited(subscription, 5)
    grant = await _route(scheduler, workspace.route(group, key="conversation"))
    assert grant.account.id == metered
    grant.release("completed")
    spend.answer = ("metered_budget_exhausted", workspace.clock.time() + 60)
    error = await _refusal(scheduler, workspace.route(group, key="conversation"))
    assert error.code == "metered_budget_exhausted" and error.routing is not None
    assert error.routing["rule"] == "kept_binding"  # AFF-3: the binding stays; the error says why


async def test_paid_2_a_review_child_is_not_steered_to_a_metered_parent_account(workspace: Workspace) -> None:
    """REVIEW-1 meets overflow: the parent conversation went to the metered account while the
    subscription cooled; its auto-review child is routed by the group's rules, not the preference."""
    group, subscription, metered = await _pool(workspace)
    scheduler = _scheduler(workspace)
    scheduler.cooldowns.rate_limited(subscription, 5)
    parent = await _route(scheduler, workspace.route(group, key="parent-thread"))
    assert parent.account.id == metered
    parent.release("completed")
    workspace.clock.advance(10)
    child = await _route(scheduler, workspace.route(group, key="child", parent_key="parent-thread"))
    assert child.account.id == subscription and child.routing["parent"] == "unavailable"
    assert "metered" not in child.routing
    child.release("completed")
