"""Sign-in, sign-out, first-admin set-up and the caller's own profile."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlmodel import col, func, select

from sublane_core import ROLE_ADMIN, ResourceGroup, SubLaneError, User
from sublane_gateway._bootstrap import create_user
from sublane_gateway._login_throttle import LoginThrottle
from sublane_gateway._passwords import verify_password
from sublane_gateway._proxy import client_address
from sublane_gateway._sessions import CurrentUser, DbSession, end_session, start_session
from sublane_gateway._state import gateway_state
from sublane_gateway._totp import consume_code
from sublane_gateway.management._audit import audit
from sublane_gateway.management._models import LoginBody, SetupBody
from sublane_gateway.management._views import groups_of_users, user_view

router = APIRouter(tags=["sign-in"])


def _signed_in(user: User) -> dict[str, Any]:
    return {"user": {"id": user.id, "username": user.username, "role": user.role}}


@router.post("/api/auth/login")
def login(body: LoginBody, request: Request, response: Response, db: DbSession) -> dict[str, Any]:
    """Sign in with username and password; sets the session cookie."""
    throttle = gateway_state(request).login_throttle
    keys = LoginThrottle.keys(body.username, client_address(request))
    if throttle is not None:
        throttle.check(keys)  # OPS-4: before the (costly) hash
    user = db.exec(select(User).where(col(User.username) == body.username)).first()
    valid = verify_password(user.password_hash if user else None, body.password)
    if user is None or not valid or not user.enabled:
        if throttle is not None:
            throttle.failed(keys)
        raise SubLaneError("invalid_credentials")
    if user.totp_enabled:  # AUTH-1: the second factor, once the password is right
        _second_factor(db, request, user, body.totp_code, throttle, keys)
    start_session(request, response, db, user)
    if throttle is not None:
        throttle.succeeded(body.username)
    return _signed_in(user)


def _second_factor(
    db: DbSession,
    request: Request,
    user: User,
    code: str | None,
    throttle: LoginThrottle | None,
    keys: tuple[str, ...],
) -> None:
    """401 ``totp_required`` without a code; 401 ``invalid_totp`` (a failed sign-in, OPS-4) for a
    wrong or spent one. A recovery code passes once, and its use is audited."""
    if not code:
        raise SubLaneError("totp_required")
    state = gateway_state(request)
    assert user.id is not None
    used = consume_code(db, state.cipher, user.id, code, state.clock.time())
    if used is None:
        if throttle is not None:
            throttle.failed(keys)
        raise SubLaneError("invalid_totp")
    if used == "recovery":
        audit(db, request, user, "user.totp_recovery_used", user.id)
        db.commit()


@router.post("/api/auth/logout", status_code=204)
def logout(request: Request, response: Response, db: DbSession) -> None:
    """End the caller's session (idempotent)."""
    end_session(request, response, db)


@router.post("/api/auth/setup", status_code=201)
def setup(body: SetupBody, request: Request, response: Response, db: DbSession) -> dict[str, Any]:
    """Create the first admin with the one-time token printed at start-up, then sign in."""
    state = gateway_state(request)
    token = state.setup_token
    if token is None or not hmac.compare_digest(token.encode(), body.token.encode()):
        raise SubLaneError("setup_not_available")
    if db.exec(select(func.count()).select_from(User)).one() > 0:
        state.setup_token = None
        raise SubLaneError("setup_not_available")
    user = create_user(db, state, username=body.username, password=body.password, role=ROLE_ADMIN)
    audit(db, request, user, "user.create", user.id, username=user.username, role=user.role, via="setup")
    db.commit()
    state.setup_token = None
    start_session(request, response, db, user)
    return _signed_in(user)


@router.get("/api/me")
def me(user: CurrentUser, db: DbSession, request: Request) -> dict[str, Any]:
    """The signed-in user, the groups they belong to, and ``sso``: whether single sign-on is on here
    and linked to this user (AUTH-2; My account offers the link)."""
    assert user.id is not None
    group_ids = groups_of_users(db, [user.id])[user.id]
    groups = db.exec(select(ResourceGroup).where(col(ResourceGroup.id).in_(group_ids))).all()
    settings = gateway_state(request).settings
    return {
        "user": user_view(user),
        "groups": [{"id": group.id, "name": group.name} for group in sorted(groups, key=lambda g: g.name)],
        "sso": {
            "configured": bool(settings.oidc_issuer and settings.oidc_client_id),
            "linked": user.oidc_subject is not None,
        },
    }
