"""Single sign-on with OpenID Connect (AUTH-2): ``/api/auth/oidc/start`` and ``/callback``.

A user is linked by issuer + ``sub``. The first SSO sign-in of an existing user links them when
the provider's *verified* e-mail is their username; an unknown one is created as a member of the
``default`` group only with ``SUBLANE_OIDC_AUTO_CREATE=true`` and a verified e-mail in
``SUBLANE_OIDC_ALLOWED_DOMAINS`` (empty: any). The admin claim makes an admin; SSO never demotes
(demoting is an admin's act, and could remove the last admin). A failed sign-in comes back to the
sign-in page as ``/?sso_error=<code>``; the reason is logged without any token or e-mail.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, func, select

from sublane_core import ROLE_ADMIN, ROLE_MEMBER, User
from sublane_gateway._bootstrap import create_user
from sublane_gateway._oidc import (
    PENDING_COOKIE,
    PENDING_TTL_S,
    OidcError,
    OidcProvider,
    admin_by_claim,
    new_pending,
    open_pending,
    seal_pending,
)
from sublane_gateway._proxy import external_host, external_scheme
from sublane_gateway._sessions import start_session
from sublane_gateway._state import GatewayState, gateway_state
from sublane_gateway.management._audit import record_action
from sublane_gateway.management._names import free_name

router = APIRouter(tags=["sign-in"])
_log = logging.getLogger("sublane.sso")
CALLBACK_PATH = "/api/auth/oidc/callback"


def _provider(state: GatewayState) -> OidcProvider:
    if state.oidc is None:
        if not OidcProvider.configured(state.settings):
            raise OidcError("sso_not_configured")
        state.oidc = OidcProvider(state.settings)
    return state.oidc


def _redirect_uri(request: Request) -> str:
    return f"{external_scheme(request)}://{external_host(request)}{CALLBACK_PATH}"


def _failed(error: OidcError) -> RedirectResponse:
    _log.warning("sso sign-in refused: %s", error)
    response = RedirectResponse(f"/?sso_error={error.code}", status_code=302)
    response.delete_cookie(PENDING_COOKIE, path="/api/auth/oidc")
    return response


@router.get("/api/auth/methods")
def methods(request: Request) -> dict[str, Any]:
    """How one may sign in here: ``{"password": true, "oidc": bool}`` (the sign-in page asks)."""
    return {"password": True, "oidc": OidcProvider.configured(gateway_state(request).settings)}


@router.get("/api/auth/oidc/start", response_model=None)
async def start(request: Request) -> RedirectResponse:
    """302 to the provider (authorization code flow with PKCE, ``state`` and ``nonce``)."""
    state = gateway_state(request)
    try:
        provider = _provider(state)
        pending = new_pending(state.clock.time())
        url = await provider.authorization_url(_redirect_uri(request), pending)
    except OidcError as error:
        return _failed(error)
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(
        PENDING_COOKIE,
        seal_pending(state.cipher, pending),
        max_age=PENDING_TTL_S,
        path="/api/auth/oidc",
        httponly=True,
        samesite="lax",  # sent on the provider's top-level redirect back
        secure=external_scheme(request) == "https",
    )
    return response


@router.get("/api/auth/oidc/callback", response_model=None)
async def callback(request: Request) -> RedirectResponse:
    """Verify the provider's answer and the ID token, then start a session; 302 to the views."""
    state = gateway_state(request)
    query = request.query_params
    try:
        provider = _provider(state)
        pending = open_pending(state.cipher, request.cookies.get(PENDING_COOKIE), state.clock.time())
        if query.get("error"):  # refused at the provider: nothing to verify, no session either way
            raise OidcError("sso_denied", query.get("error", "")[:64])
        if not hmac.compare_digest(query.get("state", ""), pending.state):
            raise OidcError("sso_state_mismatch")
        code = query.get("code")
        if not code:
            raise OidcError("sso_failed", "no code")
        claims = await provider.exchange(_redirect_uri(request), code, pending)
        user = await anyio.to_thread.run_sync(_user_for, state, provider.issuer, claims)
    except OidcError as error:
        return _failed(error)
    response = RedirectResponse("/requests", status_code=302)
    response.delete_cookie(PENDING_COOKIE, path="/api/auth/oidc")

    def begin() -> None:
        with Session(state.engine) as db:
            start_session(request, response, db, user)

    await anyio.to_thread.run_sync(begin)
    return response


def _user_for(state: GatewayState, issuer: str, claims: dict[str, Any]) -> User:
    """The user the verified claims sign in as: linked, linked now, or created; else an error."""
    settings = state.settings
    subject = str(claims["sub"])[:255]
    email = claims.get("email") if claims.get("email_verified") is True else None
    admin = admin_by_claim(claims, settings.oidc_admin_claim, settings.oidc_admin_value)
    with Session(state.engine) as db:
        user = db.exec(
            select(User).where(col(User.oidc_issuer) == issuer, col(User.oidc_subject) == subject)
        ).first()
        if user is None and isinstance(email, str):
            user = db.exec(
                select(User).where(
                    func.lower(col(User.username)) == email.lower(), col(User.oidc_subject).is_(None)
                )
            ).first()
            if user is not None:
                user.oidc_issuer, user.oidc_subject = issuer, subject
                record_action(db, actor=user, action="user.sso_link", object_id=user.id)
        if user is None:
            user = _created(db, state, issuer, subject, email, admin)
        if not user.enabled:
            raise OidcError("sso_user_disabled")
        if admin and user.role != ROLE_ADMIN:
            user.role = ROLE_ADMIN
            record_action(
                db,
                actor=user,
                action="user.update",
                object_id=user.id,
                summary={"role": "admin", "via": "sso"},
            )
        db.add(user)
        db.commit()
        db.refresh(user)
        return user


def _created(db: Session, state: GatewayState, issuer: str, subject: str, email: object, admin: bool) -> User:
    settings = state.settings
    if not settings.oidc_auto_create:
        raise OidcError("sso_no_account")
    if not isinstance(email, str) or "@" not in email:
        raise OidcError("sso_no_verified_email")
    domain = email.rsplit("@", 1)[1].lower()
    if settings.oidc_allowed_domains and domain not in {d.lower() for d in settings.oidc_allowed_domains}:
        raise OidcError("sso_domain_not_allowed")
    taken = {name.lower() for name in db.exec(select(User.username)).all()}
    username = free_name(email, taken, 64)
    user = create_user(
        db,
        state,
        username=username,
        password=secrets.token_urlsafe(32),  # no one knows it: this user signs in by SSO
        role=ROLE_ADMIN if admin else ROLE_MEMBER,
    )
    user.oidc_issuer, user.oidc_subject = issuer, subject
    db.flush()
    record_action(
        db, actor=user, action="user.create", object_id=user.id, summary={"username": username, "via": "sso"}
    )
    return user
