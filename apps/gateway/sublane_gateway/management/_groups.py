"""Resource groups: their members, accounts and model policy (admin only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, delete, select

from sublane_core import (
    DEFAULT_GROUP_NAME,
    Account,
    GroupAccount,
    GroupMember,
    ResourceGroup,
    SubLaneError,
    User,
    signals,
)
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit, changes, replaced
from sublane_gateway.management._ids import get_or_404, require_existing
from sublane_gateway.management._metered import caps_changed, group_spend_views
from sublane_gateway.management._models import GroupAccounts, GroupCreate, GroupMembers, GroupUpdate, PathId
from sublane_gateway.management._views import group_view

router = APIRouter(tags=["groups"])


def _members(db: Session, group_ids: list[int]) -> dict[int, list[int]]:
    result: dict[int, list[int]] = {group_id: [] for group_id in group_ids}
    for row in db.exec(select(GroupMember).where(col(GroupMember.group_id).in_(group_ids))):
        result[row.group_id].append(row.user_id)
    return result


def _accounts(db: Session, group_ids: list[int]) -> dict[int, list[int]]:
    result: dict[int, list[int]] = {group_id: [] for group_id in group_ids}
    for row in db.exec(select(GroupAccount).where(col(GroupAccount.group_id).in_(group_ids))):
        result[row.group_id].append(row.account_id)
    return result


def _views(db: Session, groups: list[ResourceGroup], request: Request) -> list[dict[str, Any]]:
    ids = [group.id for group in groups if group.id is not None]
    members, accounts = _members(db, ids), _accounts(db, ids)
    spend = group_spend_views(request, groups)  # PAID-3
    return [
        group_view(group, sorted(members[group.id]), sorted(accounts[group.id])) | spend[group.id]
        for group in groups
        if group.id is not None
    ]


def _settings(group: ResourceGroup) -> dict[str, Any]:
    """What ``PATCH /api/groups/{id}`` may change, as its audit entry compares it."""
    return {
        "name": group.name,
        "model_policy": group.model_policy,
        "metered": group.metered,
        "overflow_after_s": group.overflow_after_s,
        "metered_monthly_usd": group.metered_monthly_usd,
    }


@router.get("/api/groups")
def list_groups(request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Every group with its member and account IDs (and its metered cap and spend, PAID-3)."""
    groups = list(db.exec(select(ResourceGroup).order_by(col(ResourceGroup.id))).all())
    return {"items": _views(db, groups, request)}


@router.get("/api/groups/{group_id}")
def get_group(group_id: PathId, request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """One group with its member and account IDs, its metered routing (PAID-2), cap and spend (PAID-3)."""
    group: ResourceGroup = get_or_404(db, ResourceGroup, group_id, "group")
    return _views(db, [group], request)[0]


@router.post("/api/groups", status_code=201)
def add_group(body: GroupCreate, request: Request, admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Add a group; ``model_policy`` ``{"allow": [...]}`` limits its models, ``null`` allows all."""
    now = gateway_state(request).clock.time()
    group = ResourceGroup(
        name=body.name,
        model_policy=body.model_policy.model_dump() if body.model_policy else None,
        created_at=now,
        updated_at=now,
    )
    db.add(group)
    try:
        db.flush()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"A group named {body.name!r} exists.") from None
    assert group.id is not None
    audit(db, request, admin, "group.create", group.id, name=group.name, model_policy=group.model_policy)
    db.commit()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.GROUP, id=group.id))
    return _views(db, [group], request)[0]


@router.patch("/api/groups/{group_id}")
def update_group(
    group_id: PathId, body: GroupUpdate, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Rename a group, change its model policy (``null`` removes the policy) or its metered
    routing (PAID-2: ``metered`` ``overflow``/``normal``/``off``, ``overflow_after_s``)."""
    group: ResourceGroup = get_or_404(db, ResourceGroup, group_id, "group")
    fields = body.model_fields_set
    before = _settings(group)
    if "name" in fields:
        if body.name is None:
            raise SubLaneError("invalid_request", "name cannot be null")
        if group.name == DEFAULT_GROUP_NAME and body.name != DEFAULT_GROUP_NAME:
            raise SubLaneError("invalid_request", "The default group keeps its name.")
        group.name = body.name
    if "model_policy" in fields:
        group.model_policy = body.model_policy.model_dump() if body.model_policy else None
    for name in ("metered", "overflow_after_s"):  # PAID-2
        if name in fields:
            value = getattr(body, name)
            if value is None:
                raise SubLaneError("invalid_request", f"{name} cannot be null")
            setattr(group, name, value)
    if "metered_monthly_usd" in fields:  # PAID-3: ``null`` removes the cap
        group.metered_monthly_usd = body.metered_monthly_usd
    group.updated_at = gateway_state(request).clock.time()
    db.add(group)
    after = _settings(group)
    audit(db, request, admin, "group.update", group_id, **changes(before, after))
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"A group named {body.name!r} exists.") from None
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.GROUP, id=group_id))
    if "metered_monthly_usd" in fields:
        caps_changed(request)
    return _views(db, [group], request)[0]


@router.put("/api/groups/{group_id}/members")
def set_members(
    group_id: PathId, body: GroupMembers, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Replace the group's members. Keys of removed members stop working in this group."""
    group: ResourceGroup = get_or_404(db, ResourceGroup, group_id, "group")
    user_ids = require_existing(db, User, body.user_ids, "user")
    audit(
        db,
        request,
        admin,
        "group.members",
        group_id,
        **replaced(_members(db, [group_id])[group_id], user_ids),
    )
    db.exec(delete(GroupMember).where(col(GroupMember.group_id) == group_id))
    db.add_all(GroupMember(group_id=group_id, user_id=user_id) for user_id in user_ids)
    group.updated_at = gateway_state(request).clock.time()
    db.add(group)
    db.commit()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.MEMBERSHIP, id=group_id))
    return _views(db, [group], request)[0]


@router.put("/api/groups/{group_id}/accounts")
def set_accounts(
    group_id: PathId, body: GroupAccounts, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Replace the group's accounts."""
    group: ResourceGroup = get_or_404(db, ResourceGroup, group_id, "group")
    account_ids = require_existing(db, Account, body.account_ids, "account")
    audit(
        db,
        request,
        admin,
        "group.accounts",
        group_id,
        **replaced(_accounts(db, [group_id])[group_id], account_ids),
    )
    db.exec(delete(GroupAccount).where(col(GroupAccount.group_id) == group_id))
    db.add_all(GroupAccount(group_id=group_id, account_id=account_id) for account_id in account_ids)
    group.updated_at = gateway_state(request).clock.time()
    db.add(group)
    db.commit()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.MEMBERSHIP, id=group_id))
    return _views(db, [group], request)[0]
