"""Token budgets (TEAM-4): a member reads theirs with its usage; an admin sets anyone's.

A ``PUT`` replaces the member's whole rule set in one transaction, after every rule was checked:
a bad rule leaves the stored set as it was. Rules keep their ID when the body names it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session, col, select

from sublane_core import ROLE_ADMIN, ResourceGroup, SubLaneError, TokenBudget, User
from sublane_gateway._sessions import AdminUser, CurrentUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._models import BudgetRules, PathId
from sublane_gateway.pipeline import client_runtime
from sublane_history import BudgetState, TokenBudgets, period_bounds, rule_of

router = APIRouter(tags=["team"])


def _rows(db: Session, user_id: int) -> list[TokenBudget]:
    return list(
        db.exec(select(TokenBudget).where(col(TokenBudget.user_id) == user_id).order_by(col(TokenBudget.id)))
    )


def _budgets(request: Request) -> TokenBudgets | None:
    return client_runtime(request).budgets


def budgets_view(request: Request, db: Session, user: User) -> dict[str, Any]:
    """``{"user_id", "enforced", "rules": [{"id", "group_id", "group_name", "model", "period",
    "limit", "enabled", "used", "resets_at", "exceeded"}]}``; ``used`` is this UTC period's input +
    output tokens (``null`` while usage summaries are off)."""
    assert user.id is not None
    rows = _rows(db, user.id)
    budgets = _budgets(request)
    states: dict[int, BudgetState] = (
        {state.rule.id: state for state in budgets.states(user.id)} if budgets is not None else {}
    )
    group_ids = {row.group_id for row in rows if row.group_id is not None}
    names = {
        group.id: group.name
        for group in db.exec(select(ResourceGroup).where(col(ResourceGroup.id).in_(group_ids)))
    }
    now = gateway_state(request).clock.time()
    items = []
    for row in rows:
        assert row.id is not None
        rule = rule_of(row.model_dump())
        state = states.get(row.id)
        items.append(
            {
                "id": row.id,
                "group_id": row.group_id,
                "group_name": names.get(row.group_id) if row.group_id is not None else None,
                "model": row.model,
                "period": row.period,
                "unit": row.unit,
                "limit": row.usd_limit if row.unit == "usd" else row.token_limit,
                "enabled": row.enabled,
                "used": state.used if state is not None else None,
                "resets_at": state.resets_at if state is not None else period_bounds(rule.period, now)[1],
                "exceeded": state.exceeded if state is not None else False,
            }
        )
    return {
        "user_id": user.id,
        "enforced": budgets is not None and user.role != ROLE_ADMIN,
        "rules": items,
    }


@router.get("/api/me/budgets")
def my_budgets(request: Request, user: CurrentUser, db: DbSession) -> dict[str, Any]:
    """*Personal*: your token budgets with what this UTC day or month has used of each."""
    return budgets_view(request, db, user)


@router.get("/api/users/{user_id}/budgets")
def user_budgets(user_id: PathId, request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """A member's token budgets with their usage."""
    return budgets_view(request, db, get_or_404(db, User, user_id, "user"))


@router.put("/api/users/{user_id}/budgets")
def set_user_budgets(
    user_id: PathId, body: BudgetRules, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """`{"rules": [{"id"?, "group_id"|null, "model"|null, "period": "day"|"month"|"5h"|"7d",
    "unit": "tokens"|"usd", "limit": 1..10^12 tokens or dollars > 0, "enabled"}]}`, at most 64:
    the member's whole rule set. A rule with the `id` of one of the member's rules replaces it and
    keeps the ID; `[]` removes every budget. `5h` and `7d` are rolling windows ending now (COST-5)."""
    user: User = get_or_404(db, User, user_id, "user")
    existing = {row.id: row for row in _rows(db, user_id)}
    group_ids = {rule.group_id for rule in body.rules if rule.group_id is not None}
    known_groups = set(db.exec(select(ResourceGroup.id).where(col(ResourceGroup.id).in_(group_ids))))
    kept: set[int] = set()
    for index, rule in enumerate(body.rules):
        if rule.unit == "tokens" and not isinstance(rule.limit, int):
            raise SubLaneError(
                "invalid_request", f"rules.{index}.limit: a number of tokens is a whole number"
            )
        if rule.group_id is not None and rule.group_id not in known_groups:
            raise SubLaneError("invalid_request", f"rules.{index}.group_id: no group with id {rule.group_id}")
        if rule.id is not None:
            if rule.id not in existing:
                raise SubLaneError("invalid_request", f"rules.{index}.id: this member has no rule {rule.id}")
            if rule.id in kept:
                raise SubLaneError("invalid_request", f"rules.{index}.id: rule {rule.id} is named twice")
            kept.add(rule.id)
    now = gateway_state(request).clock.time()
    for rule_id, row in existing.items():
        if rule_id not in kept:
            db.delete(row)
    for rule in body.rules:
        row = (
            existing[rule.id]
            if rule.id is not None
            else TokenBudget(
                user_id=user_id, period=rule.period, token_limit=0, created_at=now, updated_at=now
            )
        )
        row.group_id, row.model, row.period = rule.group_id, rule.model, rule.period
        usd = rule.unit == "usd"
        row.unit, row.usd_limit = rule.unit, float(rule.limit) if usd else None
        row.token_limit = 0 if usd else int(rule.limit)
        row.enabled, row.updated_at = rule.enabled, now
        db.add(row)
    audit(db, request, admin, "user.budgets", user_id, rules=len(body.rules))
    db.commit()
    request.app.state["history"].flush(2.0)  # COST-5: rolling rules count from the records written
    budgets = _budgets(request)
    if budgets is not None:
        budgets.set_rules(user_id, [rule_of(row.model_dump()) for row in _rows(db, user_id)])
        if any(rule.unit == "usd" for rule in body.rules):  # COST-5 prices this member's calls as they end
            request.app.state["price_loading"].changed()
    return budgets_view(request, db, user)
