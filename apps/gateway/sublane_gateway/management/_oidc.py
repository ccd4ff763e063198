"""Single sign-on with OpenID Connect (AUTH-2): ``/api/auth/oidc/start`` and ``/callback``.

A user is linked by issuer + ``sub`` only. An identity whose verified e-mail is an existing user's
name does not sign in as that user (that would pass their password and TOTP by): it is refused with
``account_exists`` until the user links SSO from My account while signed in
(``POST /api/me/oidc/link`` → the provider → the callback links the signed-in user), or, with
``SUBLANE_OIDC_LINK_BY_EMAIL=true``, its first sign-in links a member (never an admin). An unknown
identity is created as a member of the ``default`` group only with ``SUBLANE_OIDC_AUTO_CREATE=true``
and a verified e-mail in ``SUBLANE_OIDC_ALLOWED_DOMAINS`` (empty: any). The admin claim makes an
admin; SSO never demotes (demoting is an admin's act, and could remove the last admin). A failed
sign-in comes back to the sign-in page as ``/?sso_error=<code>`` (a failed link to My account as
``/password?sso_error=<code>``); the reason is logged without any token or e-mail.

The ``redirect_uri`` is ``SUBLANE_PUBLIC_URL`` + the callback path, else the scheme and host a trusted
proxy forwards (OPS-6); a Host header from an untrusted peer is never used (``sso_public_url_required``).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from sqlmodel import Session, col, func, select

from sublane_core import ROLE_ADMIN, ROLE_MEMBER, SubLaneError, User
from sublane_gateway._bootstrap import create_user
from sublane_gateway._oidc import (
    PENDING_COOKIE,
    PENDING_TTL_S,
    OidcError,
    OidcProvider,
    Pending,
    admin_by_claim,
    new_pending,
    open_pending,
    seal_pending,
)
from sublane_gateway._proxy import external_host, external_scheme, from_trusted_proxy
from sublane_gateway._sessions import CurrentUser, current_user, start_session
from sublane_gateway._state import GatewayState, gateway_state
from sublane_gateway.management._audit import record_action
from sublane_gateway.management._names import free_name

router = APIRouter(tags=["sign-in"])
_log = logging.getLogger("sublane.sso")
CALLBACK_PATH = "/api/auth/oidc/callback"
ACCOUNT_PAGE = "/password"  # the web's My account, where a link starts and ends


def _provider(state: GatewayState) -> OidcProvider:
    if state.oidc is None:
        if not OidcProvider.configured(state.settings):
            raise OidcError("sso_not_configured")
        state.oidc = OidcProvider(state.settings)
    return state.oidc


def _redirect_uri(request: Request, state: GatewayState) -> str:
    """AUTH-2 (redirect): from ``SUBLANE_PUBLIC_URL``, else the host a trusted proxy forwards."""
    if state.settings.public_url is not None:
        return f"{state.settings.public_url}{CALLBACK_PATH}"
    if not from_trusted_proxy(request):
        raise OidcError("sso_public_url_required", "set SUBLANE_PUBLIC_URL or SUBLANE_TRUSTED_PROXIES")
    host = external_host(request)
    if not host or any(char in host for char in "/\\?#@ "):
        raise OidcError("sso_public_url_required", "the forwarded host is not a host")
    return f"{external_scheme(request)}://{host}{CALLBACK_PATH}"


def _failed(error: OidcError, page: str = "/") -> RedirectResponse:
    _log.warning("sso %s refused: %s", "sign-in" if page == "/" else "link", error)
    response = RedirectResponse(f"{page}?sso_error={error.code}", status_code=302)
    response.delete_cookie(PENDING_COOKIE, path="/api/auth/oidc")
    return response


async def _begin(request: Request, response: Response, link: int | None) -> str:
    """The provider's authorization URL for a new sign-in (or link), its pending cookie set on
    ``response``."""
    state = gateway_state(request)
    provider = _provider(state)
    pending = new_pending(state.clock.time(), link)
    url = await provider.authorization_url(_redirect_uri(request, state), pending)
    response.set_cookie(
        PENDING_COOKIE,
        seal_pending(state.cipher, pending),
        max_age=PENDING_TTL_S,
        path="/api/auth/oidc",
        httponly=True,
        samesite="lax",  # sent on the provider's top-level redirect back
        secure=external_scheme(request) == "https",
    )
    return url


@router.get("/api/auth/methods")
def methods(request: Request) -> dict[str, Any]:
    """How one may sign in here: ``{"password": true, "oidc": bool}`` (the sign-in page asks)."""
    return {"password": True, "oidc": OidcProvider.configured(gateway_state(request).settings)}


@router.get("/api/auth/oidc/start", response_model=None)
async def start(request: Request) -> RedirectResponse:
    """302 to the provider (authorization code flow with PKCE, ``state`` and ``nonce``)."""
    response = RedirectResponse("/", status_code=302)
    try:
        response.headers["location"] = await _begin(request, response, None)
    except OidcError as error:
        return _failed(error)
    return response


@router.post("/api/me/oidc/link")
async def link(request: Request, response: Response, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: link your account to your SSO identity. Answers ``{"authorization_url"}``: open it
    (the web's My account does); the provider's callback links the identity to the user signed in
    in this browser, and comes back to ``/password?sso_linked=1`` (or ``?sso_error=<code>``).
    400 ``sso_not_configured`` without SSO."""
    try:
        url = await _begin(request, response, user.id)
    except OidcError as error:
        _log.warning("sso link refused: %s", error)
        known = error.code in ("sso_not_configured", "sso_public_url_required")
        raise SubLaneError(error.code if known else "sso_unavailable") from None
    return {"authorization_url": url}


@router.get("/api/auth/oidc/callback", response_model=None)
async def callback(request: Request) -> RedirectResponse:
    """Verify the provider's answer and the ID token, then start a session; 302 to the views."""
    state = gateway_state(request)
    query = request.query_params
    page = "/"
    try:
        provider = _provider(state)
        pending = open_pending(state.cipher, request.cookies.get(PENDING_COOKIE), state.clock.time())
        page = "/" if pending.link is None else ACCOUNT_PAGE
        if query.get("error"):  # refused at the provider: nothing to verify, no session either way
            raise OidcError("sso_denied", query.get("error", "")[:64])
        if not hmac.compare_digest(query.get("state", ""), pending.state):
            raise OidcError("sso_state_mismatch")
        code = query.get("code")
        if not code:
            raise OidcError("sso_failed", "no code")
        claims = await provider.exchange(_redirect_uri(request, state), code, pending)
        if pending.link is not None:
            await anyio.to_thread.run_sync(_link, request, state, pending, provider.issuer, claims)
            linked = RedirectResponse(f"{ACCOUNT_PAGE}?sso_linked=1", status_code=302)
            linked.delete_cookie(PENDING_COOKIE, path="/api/auth/oidc")
            return linked
        user = await anyio.to_thread.run_sync(_user_for, state, provider.issuer, claims)
    except OidcError as error:
        return _failed(error, page)
    response = RedirectResponse("/requests", status_code=302)
    response.delete_cookie(PENDING_COOKIE, path="/api/auth/oidc")

    def begin() -> None:
        with Session(state.engine) as db:
            start_session(request, response, db, user)

    await anyio.to_thread.run_sync(begin)
    return response


def _link(
    request: Request, state: GatewayState, pending: Pending, issuer: str, claims: dict[str, Any]
) -> None:
    """Link the verified identity to the user who asked, if that user is still the one signed in
    in this browser and the identity is nobody else's."""
    subject = str(claims["sub"])[:255]
    with Session(state.engine) as db:
        try:
            user = current_user(request, db)
        except SubLaneError:
            raise OidcError("sso_link_not_signed_in") from None
        if user.id != pending.link:
            raise OidcError("sso_link_not_signed_in", "another user is signed in now")
        owner = db.exec(
            select(User).where(col(User.oidc_issuer) == issuer, col(User.oidc_subject) == subject)
        ).first()
        if owner is not None and owner.id != user.id:
            raise OidcError("sso_identity_in_use")
        user.oidc_issuer, user.oidc_subject = issuer, subject
        user.updated_at = state.clock.time()
        db.add(user)
        record_action(db, actor=user, action="user.sso_link", object_id=user.id, summary={"via": "account"})
        db.commit()


def _user_for(state: GatewayState, issuer: str, claims: dict[str, Any]) -> User:
    """The user the verified claims sign in as: linked, linked now by e-mail (only when allowed),
    or created; else an error."""
    settings = state.settings
    subject = str(claims["sub"])[:255]
    email = claims.get("email") if claims.get("email_verified") is True else None
    admin = admin_by_claim(claims, settings.oidc_admin_claim, settings.oidc_admin_value)
    with Session(state.engine) as db:
        user = db.exec(
            select(User).where(col(User.oidc_issuer) == issuer, col(User.oidc_subject) == subject)
        ).first()
        if user is None and isinstance(email, str):
            named = db.exec(select(User).where(func.lower(col(User.username)) == email.lower())).first()
            if named is not None:
                linkable = named.role != ROLE_ADMIN and named.oidc_subject is None
                if not (settings.oidc_link_by_email and linkable):
                    raise OidcError("account_exists", "link SSO from My account while signed in")
                user = named
                user.oidc_issuer, user.oidc_subject = issuer, subject
                summary = {"via": "email"}
                record_action(db, actor=user, action="user.sso_link", object_id=user.id, summary=summary)
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
