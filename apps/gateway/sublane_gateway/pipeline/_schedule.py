"""Taking a slot for a call: which providers can serve it, the model policy, and the scheduler.

The gateway never names a provider: a call can go to every adapter whose upstream protocol its
client protocol can reach (the same protocol, or one with a translator) and that offers the
operation; an explicit prefix (``codex/…``, AFF-6) narrows that to one registered provider.
"""

from __future__ import annotations

from collections.abc import Mapping

from sublane_core import SubLaneError
from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_gateway.pipeline._serving import serving_providers, upstream_operation
from sublane_scheduler import AccountInfo, Grant, Recheck, RouteRequest

__all__ = [
    "check_budget",
    "check_policy",
    "Recheck",
    "recheck_before_retry",
    "route_request",
    "schedule",
    "selection_recheck",
    "serving_providers",
    "split_model",
    "upstream_operation",
]


def split_model(model: str, providers: Mapping[str, object]) -> tuple[str | None, str]:
    """``(provider, model)``, an explicit provider prefix (``<provider>/``) taken off (AFF-6)."""
    prefix, sep, rest = model.partition("/")
    if sep and prefix in providers and rest:
        return prefix, rest
    return None, model


def check_policy(principal: Principal, model: str) -> None:
    """403 ``model_not_allowed`` when the group's model policy does not list ``model``."""
    if principal.model_policy is not None and model not in principal.model_policy:
        raise SubLaneError("model_not_allowed", f"The group '{principal.group_name}' may not use {model!r}.")


def check_budget(runtime: ClientRuntime, principal: Principal, model: str) -> None:
    """429 ``token_budget_exceeded`` when one of the member's token budgets is used up (TEAM-4).

    In memory, O(the member's rules); admins have none that bind them (TEAM-1).
    """
    budgets = runtime.budgets
    if budgets is not None and not principal.is_admin:
        budgets.check(principal.user_id, principal.group_id, model)


async def recheck_before_retry(
    runtime: ClientRuntime, principal: Principal, account: AccountInfo, model: str
) -> None:
    """RETRY-2: what a retry on the same lease re-checks — the key, member and group policy, the
    member's token budget, and that the account is still enabled, of the same lifecycle (no
    disable/enable or re-authorization meanwhile), in the key's group, not cooling, with usable
    credentials and quota for ``model``. Raises the error the client gets instead of the retry."""
    current = await runtime.keys.authenticate_again(principal)
    check_policy(current, model)
    check_budget(runtime, current, model)
    directory = runtime.directory
    await directory.refresh()
    now = directory.get(account.id)
    if (
        now is None
        or not now.enabled
        or not now.auth_ok
        or now.lifecycle_revision != account.lifecycle_revision
        or not directory.in_group(current.group_id, account.id)
        or runtime.vault.needs_reauth(account.id)
    ):
        raise SubLaneError("no_account_available", "The account became unavailable during retries.")
    runtime.scheduler.check_dispatch(account.id, model)  # cooling, or out of quota (QUOTA-7)


def selection_recheck(
    runtime: ClientRuntime, principal: Principal, model: str, *, budget_checked: bool = False
) -> Recheck:
    """What is checked again before every selection (WAIT-5): key, member, group, the model policy
    and the member's token budget.

    ``budget_checked``: the caller has just checked the budget at admission, so the first selection
    skips that check (TEAM-4: at admission and again before a woken waiter is dispatched); every
    later one, after a wait, makes it.
    """
    skip_budget = budget_checked

    async def recheck() -> None:
        nonlocal skip_budget
        current = await runtime.keys.authenticate_again(principal)
        check_policy(current, model)
        if skip_budget:
            skip_budget = False
        else:
            check_budget(runtime, current, model)

    return recheck


def route_request(
    principal: Principal,
    providers: tuple[str, ...],
    model: str,
    request_id: str,
    *,
    conversation_key: str | None,
    continuation: bool,
    wait: bool = True,
    parent_key: str | None = None,
) -> RouteRequest:
    """What the scheduler is told about a model request of ``principal``."""
    bound = not principal.is_admin  # TEAM-1: admins only meet workspace and account limits
    return RouteRequest(
        request_id=request_id,
        user_id=principal.user_id,
        group_id=principal.group_id,
        model=model,
        conversation_key=conversation_key,
        continuation=continuation,
        member_limit=principal.member_concurrency if bound else 0,
        rpm=principal.rpm if bound else 0,
        wait=wait,
        providers=providers,
        parent_key=parent_key,
    )


async def schedule(
    runtime: ClientRuntime,
    principal: Principal,
    providers: tuple[str, ...],
    model: str,
    request_id: str,
    *,
    conversation_key: str | None,
    continuation: bool,
    wait: bool = True,
    parent_key: str | None = None,
) -> Grant:
    """Admit the request and take a slot on an eligible account (waiting when needed).

    The token budget is checked before admission (a refused request uses no RPM allowance) and
    again before every selection after a wait, so a request woken from a wait is not dispatched
    once the member's budget ran out meanwhile (TEAM-4, WAIT-5). Nothing is reserved while waiting.
    """
    check_budget(runtime, principal, model)
    request = route_request(
        principal,
        providers,
        model,
        request_id,
        conversation_key=conversation_key,
        continuation=continuation,
        wait=wait,
        parent_key=parent_key,
    )
    recheck = selection_recheck(runtime, principal, model, budget_checked=True)
    return await runtime.scheduler.route(request, recheck)
