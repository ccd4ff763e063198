"""Passwords (TEAM-2): change your own, or an admin sets anyone's. Every change ends all of that
user's sessions (the caller's too); API keys are untouched."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from sublane_core import SubLaneError, User
from sublane_gateway._login_throttle import SessionGuesses
from sublane_gateway._passwords import hash_password, verify_password
from sublane_gateway._proxy import client_address
from sublane_gateway._sessions import SESSION_COOKIE, AdminUser, CurrentUser, DbSession, forget_sessions_of
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._models import OwnPasswordChange, PasswordReset, PathId

router = APIRouter(tags=["team"])


def _set_password(
    request: Request, db: DbSession, user: User, password: str, admin: User | None = None
) -> None:
    assert user.id is not None
    user.password_hash = hash_password(password)
    user.updated_at = gateway_state(request).clock.time()
    db.add(user)
    forget_sessions_of(db, user.id)
    if admin is not None:  # an admin's reset of another member's password (OPS-10; never the password)
        audit(db, request, admin, "user.password_reset", user.id)
    db.commit()


@router.post("/api/me/password", status_code=204)
def change_my_password(
    body: OwnPasswordChange, request: Request, response: Response, user: CurrentUser, db: DbSession
) -> None:
    """*Personal*: `{"current_password", "new_password"}` (8–128 characters). Signs you out
    everywhere, here too: sign in again with the new password. Wrong current passwords are
    throttled like failed sign-ins (OPS-4: 429 ``too_many_attempts``)."""
    guesses = SessionGuesses(gateway_state(request).login_throttle, user.username, client_address(request))
    if not verify_password(user.password_hash, body.current_password):
        guesses.failed()
        raise SubLaneError("wrong_password")
    guesses.succeeded()
    _set_password(request, db, user, body.new_password)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")


@router.post("/api/users/{user_id}/password", status_code=204)
def reset_password(
    user_id: PathId, body: PasswordReset, request: Request, admin: AdminUser, db: DbSession
) -> None:
    """`{"new_password"}` (8–128 characters); ends all of that user's sessions, keeps their keys."""
    _set_password(request, db, get_or_404(db, User, user_id, "user"), body.new_password, admin)
