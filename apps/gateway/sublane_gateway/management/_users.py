"""Members and admins (admin only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from sublane_core import ROLE_ADMIN, ResourceGroup, SubLaneError, User, signals
from sublane_gateway._bootstrap import create_user
from sublane_gateway._passwords import hash_password
from sublane_gateway._sessions import AdminUser, DbSession, forget_sessions_of
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit, change
from sublane_gateway.management._ids import get_or_404, require_existing
from sublane_gateway.management._models import PathId, UserCreate, UserUpdate
from sublane_gateway.management._views import groups_of_users, user_view

router = APIRouter(tags=["users"])


@router.get("/api/users")
def list_users(_admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Every user, with their group IDs."""
    users = db.exec(select(User).order_by(col(User.id))).all()
    groups = groups_of_users(db, [user.id for user in users if user.id is not None])
    return {"items": [user_view(user, groups[user.id]) for user in users if user.id is not None]}


@router.post("/api/users", status_code=201)
def add_user(body: UserCreate, request: Request, admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Add a member or admin; without ``group_ids`` they join the ``default`` group."""
    group_ids = (
        None if body.group_ids is None else require_existing(db, ResourceGroup, body.group_ids, "group")
    )
    try:
        user = create_user(
            db,
            gateway_state(request),
            username=body.username,
            password=body.password,
            role=body.role,
            enabled=body.enabled,
            member_concurrency=body.member_concurrency,
            rpm=body.rpm,
            group_ids=group_ids,
        )
        assert user.id is not None
        audit(
            db,
            request,
            admin,
            "user.create",
            user.id,
            username=user.username,
            role=user.role,
            enabled=user.enabled,
            member_concurrency=user.member_concurrency,
            rpm=user.rpm,
            group_ids=group_ids,
        )
        db.commit()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"A user named {body.username!r} exists.") from None
    assert user.id is not None
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.USER, id=user.id))
    return user_view(user, groups_of_users(db, [user.id])[user.id])


def _enabled_admins(db: Session) -> int:
    count: int = db.exec(
        select(func.count()).select_from(User).where(col(User.role) == ROLE_ADMIN, col(User.enabled))
    ).one()
    return count


@router.patch("/api/users/{user_id}")
def update_user(
    user_id: PathId, body: UserUpdate, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Change a user's name, password, role, enabled flag or limits."""
    user: User = get_or_404(db, User, user_id, "user")
    fields = body.model_fields_set
    loses_admin = (
        user.role == ROLE_ADMIN
        and user.enabled
        and (
            ("role" in fields and body.role != ROLE_ADMIN) or ("enabled" in fields and body.enabled is False)
        )
    )
    if loses_admin and _enabled_admins(db) <= 1:
        raise SubLaneError("last_admin")
    changes: dict[str, Any] = {}
    for name in ("username", "role", "enabled", "member_concurrency", "rpm"):
        value = getattr(body, name)
        if name in fields and value is None:
            raise SubLaneError("invalid_request", f"{name} cannot be null")
        if name in fields:
            changes[name] = change(getattr(user, name), value)
            setattr(user, name, value)
    if "username" in fields:
        _flush_name(db, body.username)  # before any statement that would flush it (sessions, audit)
    if "password" in fields:
        if body.password is None:
            raise SubLaneError("invalid_request", "password cannot be null")
        user.password_hash = hash_password(body.password)
        changes["password_changed"] = True
    if "password" in fields or user.enabled is False:
        forget_sessions_of(db, user_id)
    user.updated_at = gateway_state(request).clock.time()
    db.add(user)
    audit(db, request, admin, "user.update", user_id, **changes)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"A user named {body.username!r} exists.") from None
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.USER, id=user_id))
    return user_view(user, groups_of_users(db, [user_id])[user_id])


def _flush_name(db: Session, username: str | None) -> None:
    """Write the changed name now: a taken one is 409 ``name_taken``, whatever else the change asks
    (a password or ``enabled`` change deletes sessions, which flushed the name outside any catch)."""
    try:
        db.flush()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"A user named {username!r} exists.") from None
