"""Two-factor sign-in with TOTP (AUTH-1): each user's own set-up, and an admin's reset.

The secret is shown once, in the set-up answer (with its ``otpauth://`` URI and a QR code drawn
here); it becomes the user's second factor only when a code from it is entered. Turning it off takes
the password and a code (or a recovery code). Every change is audited, never with a secret or code.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import col, delete

from sublane_core import SubLaneError, TotpRecoveryCode, User
from sublane_gateway._login_throttle import SessionGuesses
from sublane_gateway._passwords import verify_password
from sublane_gateway._proxy import client_address
from sublane_gateway._sessions import AdminUser, CurrentUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway._totp import (
    clear_totp,
    consume_code,
    matching_step,
    new_recovery_codes,
    new_secret,
    otpauth_uri,
    qr_svg,
    recovery_digest,
    seal,
    unseal,
)
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._models import PathId, TotpDisableBody, TotpEnableBody

router = APIRouter(tags=["sign-in"])


def _invalid() -> SubLaneError:
    """A wrong code on a signed-in route: 400, so the page does not read it as a lost session."""
    return SubLaneError("invalid_totp", status=400)


@router.post("/api/me/totp/setup")
def setup(request: Request, user: CurrentUser, db: DbSession) -> dict[str, Any]:
    """A new secret for your authenticator app: ``secret``, ``otpauth_uri`` and ``qr_svg`` (an SVG
    of the URI). Shown once; pending until ``/api/me/totp/enable`` gets a code from it."""
    if user.totp_enabled:
        raise SubLaneError("totp_already_enabled")
    state = gateway_state(request)
    secret = new_secret()
    user.totp_pending = seal(state.cipher, secret)
    db.add(user)
    audit(db, request, user, "user.totp_setup", user.id)
    db.commit()
    uri = otpauth_uri(secret, user.username)
    return {"secret": secret, "otpauth_uri": uri, "qr_svg": qr_svg(uri)}


@router.post("/api/me/totp/enable")
def enable(body: TotpEnableBody, request: Request, user: CurrentUser, db: DbSession) -> dict[str, Any]:
    """Turn TOTP on with a code of the pending secret; the answer holds ten single-use recovery
    codes, shown this once."""
    if user.totp_enabled:
        raise SubLaneError("totp_already_enabled")
    if user.totp_pending is None:
        raise SubLaneError("totp_not_set_up")
    state = gateway_state(request)
    step = matching_step(unseal(state.cipher, user.totp_pending), body.code, state.clock.time(), None)
    if step is None:
        raise _invalid()
    codes = new_recovery_codes()
    user.totp_secret, user.totp_pending = user.totp_pending, None
    user.totp_enabled, user.totp_last_step = True, step  # this code is spent too
    user.updated_at = state.clock.time()
    db.add(user)
    db.exec(delete(TotpRecoveryCode).where(col(TotpRecoveryCode.user_id) == user.id))
    assert user.id is not None
    db.add_all(TotpRecoveryCode(user_id=user.id, digest=recovery_digest(code)) for code in codes)
    audit(db, request, user, "user.totp_enable", user.id)
    db.commit()
    return {"recovery_codes": codes}


@router.post("/api/me/totp/disable", status_code=204)
def disable(body: TotpDisableBody, request: Request, user: CurrentUser, db: DbSession) -> None:
    """Turn TOTP off with your password and a code (or a recovery code). Wrong ones are throttled
    like failed sign-ins (OPS-4: 429 ``too_many_attempts``)."""
    if not user.totp_enabled:
        raise SubLaneError("totp_not_enabled")
    state = gateway_state(request)
    guesses = SessionGuesses(state.login_throttle, user.username, client_address(request))
    if not verify_password(user.password_hash, body.password):
        guesses.failed()
        raise SubLaneError("invalid_credentials", status=400)
    assert user.id is not None
    if consume_code(db, state.cipher, user.id, body.code, state.clock.time()) is None:
        guesses.failed()
        raise _invalid()
    guesses.succeeded()
    db.refresh(user)
    clear_totp(db, user)
    user.updated_at = state.clock.time()
    audit(db, request, user, "user.totp_disable", user.id)
    db.commit()


@router.delete("/api/users/{user_id}/totp", status_code=204)
def reset(user_id: PathId, request: Request, admin: AdminUser, db: DbSession) -> None:
    """An admin turns a user's TOTP off (a lost phone: docs/security.md); they sign in with their
    password alone until they set it up again."""
    user: User = get_or_404(db, User, user_id, "user")
    clear_totp(db, user)
    user.updated_at = gateway_state(request).clock.time()
    audit(db, request, admin, "user.totp_reset", user_id, username=user.username)
    db.commit()
