"""API keys: members manage their own, admins issue and see all. Secrets are shown once."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session, col, func, or_, select

from sublane_core import (
    ApiKey,
    GroupMember,
    ResourceGroup,
    SubLaneError,
    User,
    new_secret_token,
    sha256_hex,
    signals,
)
from sublane_gateway._sessions import AdminUser, CurrentUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit, change
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._models import KeyCreate, KeyUpdate, PathId
from sublane_gateway.management._views import key_view

router = APIRouter(tags=["keys"])

KEY_PREFIX = "sl_"
MAX_LIVE_KEYS = 20


def new_key_secret() -> str:
    """``sl_`` + 32 random bytes in unpadded base64url (SPEC §14)."""
    return KEY_PREFIX + new_secret_token(32)


def _hint(secret: str) -> str:
    return f"{secret[:7]}…{secret[-4:]}"


def _live_keys(db: Session, user_id: int, now: float) -> int:
    count: int = db.exec(
        select(func.count())
        .select_from(ApiKey)
        .where(
            col(ApiKey.user_id) == user_id,
            col(ApiKey.revoked_at).is_(None),
            or_(col(ApiKey.expires_at).is_(None), col(ApiKey.expires_at) > now),
        )
    ).one()
    return count


def _issue(db: Session, request: Request, actor: User, owner: User, body: KeyCreate) -> dict[str, Any]:
    assert owner.id is not None
    now = gateway_state(request).clock.time()
    group: ResourceGroup = get_or_404(db, ResourceGroup, body.group_id, "group")
    if db.get(GroupMember, (body.group_id, owner.id)) is None:
        raise SubLaneError("not_group_member", f"{owner.username} is not a member of group {group.name!r}.")
    if body.expires_at is not None and body.expires_at <= now:
        raise SubLaneError("invalid_request", "expires_at must be in the future")
    if _live_keys(db, owner.id, now) >= MAX_LIVE_KEYS:
        raise SubLaneError("key_limit_reached")
    secret = new_key_secret()
    key = ApiKey(
        user_id=owner.id,
        group_id=body.group_id,
        name=body.name,
        digest=sha256_hex(secret),
        hint=_hint(secret),
        created_at=now,
        expires_at=body.expires_at,
        allowed_ips=body.allowed_ips or None,  # AUTH-3: [] or absent = any address
    )
    db.add(key)
    db.flush()
    assert key.id is not None
    audit(
        db,
        request,
        actor,
        "key.create",
        key.id,
        name=key.name,
        owner_id=owner.id,
        group_id=key.group_id,
        expires_at=key.expires_at,
        allowed_ips=key.allowed_ips,
    )
    db.commit()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.KEY, id=key.id))
    return key_view(key, now, group_name=group.name) | {"secret": secret}


def _list(db: Session, request: Request, user_id: int | None) -> dict[str, Any]:
    now = gateway_state(request).clock.time()
    query = (
        select(ApiKey, ResourceGroup.name, User.username)
        .join(ResourceGroup, col(ResourceGroup.id) == col(ApiKey.group_id))
        .join(User, col(User.id) == col(ApiKey.user_id))
        .order_by(col(ApiKey.id))
    )
    if user_id is not None:
        query = query.where(col(ApiKey.user_id) == user_id)
    return {
        "items": [
            key_view(key, now, group_name=group_name, username=username)
            for key, group_name, username in db.exec(query)
        ]
    }


def _owned_key(db: Session, key_id: int, owner_id: int | None) -> ApiKey:
    key = db.get(ApiKey, key_id)
    if key is None or (owner_id is not None and key.user_id != owner_id):
        raise SubLaneError("not_found", f"No key with id {key_id}.")  # others' keys do not exist for you
    return key


def _revoke(db: Session, request: Request, actor: User, key_id: int, owner_id: int | None) -> dict[str, Any]:
    key = _owned_key(db, key_id, owner_id)
    now = gateway_state(request).clock.time()
    if key.revoked_at is None:
        key.revoked_at = now
        db.add(key)
        audit(db, request, actor, "key.revoke", key_id, name=key.name, owner_id=key.user_id)
        db.commit()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.KEY, id=key_id))
    group = db.get(ResourceGroup, key.group_id)
    return key_view(key, now, group_name=group.name if group else None)


def _update(
    db: Session, request: Request, actor: User, key_id: int, owner_id: int | None, body: KeyUpdate
) -> dict[str, Any]:
    key = _owned_key(db, key_id, owner_id)
    if key.revoked_at is not None:
        raise SubLaneError("invalid_request", "A revoked key stays revoked.")
    enabled = key.enabled if body.enabled is None else body.enabled
    allowed = (key.allowed_ips or []) if body.allowed_ips is None else body.allowed_ips
    audit(
        db,
        request,
        actor,
        "key.update",
        key_id,
        owner_id=key.user_id,
        enabled=change(key.enabled, enabled),
        allowed_ips=change(key.allowed_ips or [], allowed),
    )
    key.enabled = enabled
    key.allowed_ips = allowed or None
    db.add(key)
    db.commit()
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.KEY, id=key_id))
    group = db.get(ResourceGroup, key.group_id)
    return key_view(key, gateway_state(request).clock.time(), group_name=group.name if group else None)


@router.get("/api/me/keys")
def my_keys(user: CurrentUser, request: Request, db: DbSession) -> dict[str, Any]:
    """The caller's keys (never their secrets)."""
    return _list(db, request, user.id)


@router.post("/api/me/keys", status_code=201)
def create_my_key(body: KeyCreate, user: CurrentUser, request: Request, db: DbSession) -> dict[str, Any]:
    """Create a key for one of the caller's groups. The answer's ``secret`` is never shown again."""
    return _issue(db, request, user, user, body)


@router.delete("/api/me/keys/{key_id}")
def revoke_my_key(key_id: PathId, user: CurrentUser, request: Request, db: DbSession) -> dict[str, Any]:
    """Revoke one of the caller's keys, at once."""
    return _revoke(db, request, user, key_id, user.id)


@router.patch("/api/me/keys/{key_id}")
def pause_my_key(
    key_id: PathId, body: KeyUpdate, user: CurrentUser, request: Request, db: DbSession
) -> dict[str, Any]:
    """Pause (``enabled: false``) or resume one of the caller's keys, and/or limit it to client
    networks (``allowed_ips``, AUTH-3; ``[]`` = any)."""
    return _update(db, request, user, key_id, user.id, body)


@router.post("/api/users/{user_id}/keys", status_code=201)
def issue_key(
    user_id: PathId, body: KeyCreate, admin: AdminUser, request: Request, db: DbSession
) -> dict[str, Any]:
    """Issue a key for a member (admin). The answer's ``secret`` is never shown again."""
    owner: User = get_or_404(db, User, user_id, "user")
    return _issue(db, request, admin, owner, body)


@router.get("/api/keys")
def all_keys(_admin: AdminUser, request: Request, db: DbSession) -> dict[str, Any]:
    """Every key of every user (admin; never secrets)."""
    return _list(db, request, None)


@router.delete("/api/keys/{key_id}")
def revoke_key(key_id: PathId, admin: AdminUser, request: Request, db: DbSession) -> dict[str, Any]:
    """Revoke any key (admin)."""
    return _revoke(db, request, admin, key_id, None)


@router.patch("/api/keys/{key_id}")
def pause_key(
    key_id: PathId, body: KeyUpdate, admin: AdminUser, request: Request, db: DbSession
) -> dict[str, Any]:
    """Pause or resume any key, and/or limit it to client networks (admin)."""
    return _update(db, request, admin, key_id, None, body)
