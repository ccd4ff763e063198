"""Browser sign-in sessions: an opaque cookie whose SHA-256 digest is the stored key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request, Response
from sqlmodel import Session, col, delete, select

from sublane_core import ROLE_ADMIN, SubLaneError, User, WebSession, new_secret_token, sha256_hex
from sublane_gateway._proxy import external_scheme
from sublane_gateway._state import gateway_state

SESSION_COOKIE = "sublane_session"


def db_session(request: Request) -> Iterator[Session]:
    """A database session for one management request; nothing is written unless it commits."""
    with Session(gateway_state(request).engine) as session:
        yield session


DbSession = Annotated[Session, Depends(db_session)]


def start_session(request: Request, response: Response, db: Session, user: User) -> None:
    """Create a session for ``user`` and set its cookie (HttpOnly, SameSite=Lax)."""
    state = gateway_state(request)
    now = state.clock.time()
    token = new_secret_token()
    db.exec(delete(WebSession).where(col(WebSession.expires_at) <= now))
    assert user.id is not None
    db.add(
        WebSession(
            token_digest=sha256_hex(token),
            user_id=user.id,
            created_at=now,
            expires_at=now + state.settings.session_ttl_s,
        )
    )
    db.commit()
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=state.settings.session_ttl_s,
        httponly=True,
        samesite="lax",
        secure=external_scheme(request) == "https",  # OPS-6: also behind a trusted TLS proxy
        path="/",
    )


def end_session(request: Request, response: Response, db: Session) -> None:
    """Forget the caller's session, if any, and clear its cookie."""
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        db.exec(delete(WebSession).where(col(WebSession.token_digest) == sha256_hex(token)))
        db.commit()
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")


def forget_sessions_of(db: Session, user_id: int) -> None:
    """End every session of a user (password change, disable). The caller commits."""
    db.exec(delete(WebSession).where(col(WebSession.user_id) == user_id))


def current_user(request: Request, db: DbSession) -> User:
    """The signed-in, enabled user, else 401 ``unauthenticated``."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        raise SubLaneError("unauthenticated")
    now = gateway_state(request).clock.time()
    row = db.exec(
        select(User)
        .join(WebSession, col(WebSession.user_id) == col(User.id))
        .where(col(WebSession.token_digest) == sha256_hex(token), col(WebSession.expires_at) > now)
    ).first()
    if row is None or not row.enabled:
        raise SubLaneError("unauthenticated", "Your session has ended; sign in again.")
    return row


CurrentUser = Annotated[User, Depends(current_user)]


def admin_user(user: CurrentUser, request: Request) -> User:
    """The signed-in user when an admin, else 403 ``forbidden``; with
    ``SUBLANE_REQUIRE_TOTP_FOR_ADMINS``, 403 ``totp_setup_required`` until they turn TOTP on (AUTH-1)."""
    if user.role != ROLE_ADMIN:
        raise SubLaneError("forbidden", "Only admins may do that.")
    if not user.totp_enabled and gateway_state(request).settings.require_totp_for_admins:
        raise SubLaneError("totp_setup_required")
    return user


AdminUser = Annotated[User, Depends(admin_user)]
