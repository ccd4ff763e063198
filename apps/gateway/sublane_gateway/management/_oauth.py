"""Adding accounts by OAuth login: PKCE authorization code with a pasted-back redirect (CRED-9).

``start`` builds the provider's authorize URL and keeps the PKCE verifier under the login's
``state``, in process memory only, for 10 minutes (:class:`~sublane_gateway._state.PendingLogins`).
The admin opens the URL, signs in, and pastes the address the browser ended on (for Codex
``http://localhost:1455/auth/callback?code=…&state=…``, where nothing listens) into ``complete``,
which trades the code for tokens and creates the account as an import does. The verifier and the
tokens never appear in an answer or a log line.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session, col, select

from sublane_core import Account, ResourceGroup, SubLaneError, User, signals
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway._state import GatewayState, PendingLogin, gateway_state
from sublane_gateway.management._accounts import create_account
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import require_existing
from sublane_gateway.management._metadata import metadata_read, through_workspace_egress
from sublane_gateway.management._models import OAuthComplete, OAuthStart
from sublane_gateway.management._views import account_view, groups_of_accounts
from sublane_gateway.pipeline import client_runtime
from sublane_providers import (
    ImportedCredentials,
    LoginFlow,
    PastedCallbackError,
    RefreshFailed,
    SignsIn,
    code_from_pasted,
    provider_names,
)

router = APIRouter(tags=["accounts"])

_log = logging.getLogger("sublane.accounts")

NAME_MAX = 64


def _login_adapter(request: Request, provider: str) -> LoginFlow:
    """The login flow of ``provider``'s adapter; 400 ``unknown_provider`` when there is none."""
    adapters = client_runtime(request).adapters
    adapter = adapters.get(provider)
    if adapter is not None and isinstance(adapter, SignsIn):  # (None first: mypy narrows an Optional badly)
        return adapter.login()
    with_login = ", ".join(name for name, item in adapters.items() if isinstance(item, SignsIn))
    if provider in provider_names():
        raise SubLaneError(
            "unknown_provider",
            f"{provider} accounts have no OAuth login (it supports {with_login}); "
            "import their credentials instead.",
        )
    raise SubLaneError(
        "unknown_provider", f"Unknown provider {provider!r}; OAuth login supports {with_login}."
    )


def _require_free_name(db: Session, name: str) -> None:
    if db.exec(select(Account.id).where(col(Account.name) == name)).first() is not None:
        raise SubLaneError("name_taken", f"An account named {name!r} exists.")


def _free_name(db: Session, provider: str, email: str | None) -> str:
    """The account's email when no account has that name, else ``email-2``…; ``codex-N`` without one."""
    taken = set(db.exec(select(Account.name)).all())
    base = (email or provider)[:NAME_MAX]
    if email and base not in taken:
        return base
    for number in itertools.count(2 if email else 1):
        suffix = f"-{number}"
        candidate = base[: NAME_MAX - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise AssertionError("unreachable")  # pragma: no cover


def _pasted_error(exc: PastedCallbackError) -> SubLaneError:
    text = str(exc)
    message = text[:1].upper() + text[1:] + "."
    if exc.provider_error is not None:
        message += " Start the login again."
    return SubLaneError("oauth_callback_invalid", message)


@router.post("/api/accounts/oauth/start")
def start_oauth_login(body: OAuthStart, request: Request, admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Begin a PKCE login: open ``authorize_url``, sign in, and paste the final address to ``complete``.

    ``name`` and ``group_ids`` are used when the account is created; without ``name`` it is named
    after the account's email. The login expires after 10 minutes and completes at most once.
    """
    adapter = _login_adapter(request, body.provider)
    group_ids = require_existing(db, ResourceGroup, body.group_ids, "group")
    if body.name is not None:
        _require_free_name(db, body.name)
    assert admin.id is not None
    state = gateway_state(request)
    url, login_state, pkce = adapter.start_login()
    now = state.clock.monotonic()
    login = PendingLogin(
        provider=body.provider,
        user_id=admin.id,
        pkce=pkce,
        name=body.name,
        group_ids=tuple(group_ids),
        expires_at=now + state.logins.ttl_s,
    )
    state.logins.add(login_state, login, now)
    audit(
        db, request, admin, "account.oauth_start", provider=body.provider, name=body.name, group_ids=group_ids
    )
    db.commit()
    return {
        "provider": body.provider,
        "authorize_url": url,
        "state": login_state,
        "expires_at": state.clock.time() + state.logins.ttl_s,
    }


@router.post("/api/accounts/oauth/complete", status_code=201)
def complete_oauth_login(
    body: OAuthComplete, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Finish a login with the pasted redirect address (or its query string, or ``CODE#STATE``).

    A paste without a code for this login, or a taken ``name``, can be corrected and sent again
    (``name`` here overrides the one given to ``start``); once the code is exchanged, or the
    provider redirected with an error, the login is used up.
    """
    assert admin.id is not None
    state = gateway_state(request)
    now = state.clock.monotonic()
    login = state.logins.get(body.state, admin.id, now)
    if login is None:
        raise SubLaneError("oauth_state_unknown")
    try:
        code = code_from_pasted(body.callback_url, body.state)
    except PastedCallbackError as exc:
        if exc.provider_error is not None:
            state.logins.take(body.state, admin.id, now)
        raise _pasted_error(exc) from None
    # Checked before the code is spent, so a mistake here does not cost the login.
    name = body.name or login.name
    require_existing(db, ResourceGroup, login.group_ids, "group")
    if name is not None:
        _require_free_name(db, name)
    adapter = _login_adapter(request, login.provider)
    # ADM-2: the exchange and profile reads are verification reads; a full workspace refuses
    # before the login's state is spent, so the admin can simply try again.
    with metadata_read(request):
        if state.logins.take(body.state, admin.id, now) is None:  # another request completed it meanwhile
            raise SubLaneError("oauth_state_unknown")
        try:
            imported = through_workspace_egress(
                request, lambda: adapter.complete_login(code, body.state, login.pkce)
            )
        except RefreshFailed as failure:
            if failure.permanent:
                message = f"The provider did not accept the authorization code ({failure.code}); start again."
                raise SubLaneError("oauth_exchange_failed", message) from None
            message = f"The provider's token endpoint failed ({failure.code}); start the login again."
            raise SubLaneError("oauth_exchange_failed", message, status=502) from None
    account = _create_account(db, state, imported, login, name, admin)
    assert account.id is not None
    _log.info("account %s (%s) added by OAuth login", account.id, account.provider)
    signals.account_changed.send(
        signals.AccountChanged(
            account_id=account.id,
            change=signals.AccountChange.CREATED,
            lifecycle_revision=account.lifecycle_revision,
            max_concurrency=account.max_concurrency,
        )
    )
    return account_view(account, groups_of_accounts(db, [account.id])[account.id])


def _create_account(
    db: Session,
    state: GatewayState,
    imported: ImportedCredentials,
    login: PendingLogin,
    name: str | None,
    admin: User,
) -> Account:
    name = name or _free_name(db, imported.provider, imported.identity.email)
    return create_account(
        db, state, imported, name, list(login.group_ids), actor=admin, action="account.oauth_login"
    )
