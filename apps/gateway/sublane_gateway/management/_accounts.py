"""Upstream accounts: import, rename, enable/disable, delete, limits (admin only).

Credentials are parsed by the provider's adapter, encrypted before they touch the database, and
never returned. Deleting an account removes its credentials and runtime state; request records keep
its ID and show it as deleted (HIST-9).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from sublane_core import (
    AUTH_OK,
    AUTH_REAUTH_REQUIRED,
    Account,
    CredentialCipher,
    CredentialDecryptError,
    GroupAccount,
    ResourceGroup,
    SubLaneError,
    User,
    checked_proxy_url,
    masked_proxy_url,
    signals,
)
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway._state import GatewayState, gateway_state
from sublane_gateway.management._audit import audit, change, changes, record_action
from sublane_gateway.management._ids import get_or_404, require_existing
from sublane_gateway.management._metadata import metadata_read, through_workspace_egress
from sublane_gateway.management._models import (
    AccountCredentials,
    AccountImport,
    AccountLimits,
    AccountUpdate,
    PathId,
)
from sublane_gateway.management._views import account_view, groups_of_accounts
from sublane_gateway.pipeline import client_runtime
from sublane_providers import (
    ChecksCredentials,
    CompletesImports,
    CredentialFormatError,
    CredentialsRefused,
    ImportedCredentials,
    RenewsCredentials,
    UnknownProviderError,
    parse_credentials,
    provider_names,
)

router = APIRouter(tags=["accounts"])
_log = logging.getLogger("sublane.accounts")


def _parse(provider: str, credentials: dict[str, Any]) -> ImportedCredentials:
    try:
        return parse_credentials(provider, credentials)
    except UnknownProviderError:
        raise SubLaneError(
            "unknown_provider",
            f"Unknown provider {provider!r}; expected one of {', '.join(provider_names())}.",
        ) from None
    except CredentialFormatError as exc:
        raise SubLaneError("invalid_credentials_file", str(exc)) from None


def _view(db: DbSession, account: Account) -> dict[str, Any]:
    assert account.id is not None
    return account_view(account, groups_of_accounts(db, [account.id])[account.id])


def _changed(account: Account, change: signals.AccountChange) -> None:
    assert account.id is not None
    signals.account_changed.send(
        signals.AccountChanged(
            account_id=account.id,
            change=change,
            lifecycle_revision=account.lifecycle_revision,
            max_concurrency=account.max_concurrency,
        )
    )


def create_account(
    db: Session,
    state: GatewayState,
    imported: ImportedCredentials,
    name: str,
    group_ids: list[int],
    *,
    actor: User,
    action: str,
) -> Account:
    """Store a new account with its credentials sealed, its groups and its audit entry (``action``
    by ``actor``); commits, or writes nothing.

    409 ``name_taken`` when the name is used; 400 when a group vanished meanwhile.
    """
    now = state.clock.time()
    account = Account(
        provider=imported.provider,
        name=name,
        credentials=state.cipher.encrypt(imported.bundle),
        credentials_expires_at=imported.expires_at,
        identity_email=imported.identity.email,
        identity_plan=imported.identity.plan,
        identity_subject=imported.identity.subject,
        created_at=now,
        updated_at=now,
    )
    db.add(account)
    try:
        db.flush()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"An account named {name!r} exists.") from None
    assert account.id is not None
    db.add_all(GroupAccount(group_id=group_id, account_id=account.id) for group_id in group_ids)
    record_action(
        db,
        actor=actor,
        action=action,
        object_id=account.id,
        summary={"name": name, "provider": account.provider, "group_ids": group_ids},
        at=now,
    )
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("invalid_request", "A group of this account was deleted meanwhile.") from None
    return account


@router.get("/api/accounts")
def list_accounts(_admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Every account with provider, identity, auth state, groups and limit (never credentials)."""
    accounts = db.exec(select(Account).order_by(col(Account.id))).all()
    groups = groups_of_accounts(db, [account.id for account in accounts if account.id is not None])
    return {
        "items": [account_view(account, groups[account.id]) for account in accounts if account.id is not None]
    }


@router.get("/api/accounts/{account_id}")
def get_account(account_id: PathId, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """One account."""
    return _view(db, get_or_404(db, Account, account_id, "account"))


@router.post("/api/accounts/import", status_code=201)
def import_account(body: AccountImport, request: Request, admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Add an account from the content of its credential file (``auth.json``, ``.credentials.json``, …)."""
    state = gateway_state(request)
    imported = _with_profile(request, _checked(request, _parse(body.provider, body.credentials)))
    group_ids = require_existing(db, ResourceGroup, body.group_ids, "group")
    account = create_account(db, state, imported, body.name, group_ids, actor=admin, action="account.import")
    _changed(account, signals.AccountChange.CREATED)
    return _view(db, account)


def _checked(request: Request, imported: ImportedCredentials) -> ImportedCredentials:
    """PAID-1: credentials the provider checks before they are stored (an API key lists models);
    400 ``invalid_credentials`` with the provider's reason when refused. Nothing is stored before."""
    adapter = client_runtime(request).adapters.get(imported.provider)
    if adapter is None or not isinstance(adapter, ChecksCredentials):
        return imported
    try:
        with metadata_read(request):  # ADM-2: a verification read
            return through_workspace_egress(request, lambda: adapter.check_credentials(imported))
    except CredentialsRefused as refused:
        raise SubLaneError("invalid_credentials", str(refused), status=400) from None


def _with_profile(request: Request, imported: ImportedCredentials) -> ImportedCredentials:
    """What the provider's adapter can add to an imported file's identity (best effort, never fails)."""
    adapter = client_runtime(request).adapters.get(imported.provider)
    if adapter is None or not isinstance(adapter, CompletesImports):
        return imported
    with metadata_read(request):  # ADM-2: a verification read
        return through_workspace_egress(request, lambda: adapter.complete_import(imported))


def _renewal(request: Request, account: Account, given: dict[str, Any]) -> dict[str, Any]:
    """What a re-authorization's credentials mean: a provider may complete what was given from the
    stored bundle (an API key given alone keeps the account's server, PAID-4)."""
    adapter = client_runtime(request).adapters.get(account.provider)
    if adapter is None or not isinstance(adapter, RenewsCredentials):
        return given
    try:
        stored = gateway_state(request).cipher.decrypt(account.credentials)
    except CredentialDecryptError:
        return given
    return adapter.renewal_credentials(stored, given)


@router.post("/api/accounts/{account_id}/credentials")
def replace_credentials(
    account_id: PathId, body: AccountCredentials, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Re-authorize an account with a fresh credential file of the same provider."""
    state = gateway_state(request)
    account: Account = get_or_404(db, Account, account_id, "account")
    imported = _checked(request, _parse(account.provider, _renewal(request, account, body.credentials)))
    runtime = client_runtime(request)
    was_reauth = account.auth_state == AUTH_REAUTH_REQUIRED or runtime.vault.needs_reauth(account_id)
    account.credentials = state.cipher.encrypt(imported.bundle)
    account.credentials_expires_at = imported.expires_at
    account.credentials_rejected_at = None
    account.identity_email = imported.identity.email or account.identity_email
    account.identity_plan = imported.identity.plan or account.identity_plan
    account.identity_subject = imported.identity.subject or account.identity_subject
    account.auth_state = AUTH_OK
    account.auth_error = None
    account.lifecycle_revision += 1
    account.updated_at = state.clock.time()
    db.add(account)
    audit(db, request, admin, "account.reauthorize", account_id, provider=account.provider)
    if was_reauth:  # ALERT-2, in the transaction that clears it
        ref = {"id": account_id, "name": account.name}
        runtime.outbox.add(
            db.connection(), "account.recovered", {"account": ref, "cleared": "reauth_required"}
        )
    db.commit()
    if was_reauth:
        runtime.outbox.added()
    _changed(account, signals.AccountChange.REAUTHORIZED)
    return _view(db, account)


def _audited(account: Account) -> dict[str, Any]:
    return {
        "name": account.name,
        "enabled": account.enabled,
        "proxy_url": account.proxy_shown,
        "monthly_price_usd": account.monthly_price_usd,
    }


@router.patch("/api/accounts/{account_id}")
def update_account(
    account_id: PathId, body: AccountUpdate, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Rename, enable or disable an account, or set its egress proxy (EGRESS-1) or its monthly
    price (COST-3). Enabling or disabling advances its lifecycle revision."""
    account: Account = get_or_404(db, Account, account_id, "account")
    fields = body.model_fields_set
    before = _audited(account)
    if "monthly_price_usd" in fields:
        account.monthly_price_usd = body.monthly_price_usd
    egress_changed = False
    if "proxy_url" in fields:
        egress_changed = set_proxy(account, body.proxy_url or None, gateway_state(request).cipher)
    changed = signals.AccountChange.UPDATED
    if "name" in fields:
        if body.name is None:
            raise SubLaneError("invalid_request", "name cannot be null")
        account.name = body.name
    if "enabled" in fields:
        if body.enabled is None:
            raise SubLaneError("invalid_request", "enabled cannot be null")
        if body.enabled != account.enabled:
            account.enabled = body.enabled
            account.lifecycle_revision += 1
            changed = signals.AccountChange.ENABLED if body.enabled else signals.AccountChange.DISABLED
    account.updated_at = gateway_state(request).clock.time()
    db.add(account)
    audit(db, request, admin, "account.update", account_id, **changes(before, _audited(account)))
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        raise SubLaneError("name_taken", f"An account named {body.name!r} exists.") from None
    _changed(account, changed)
    if egress_changed:
        _changed(account, signals.AccountChange.EGRESS)
    return _view(db, account)


def set_proxy(account: Account, url: str | None, cipher: CredentialCipher) -> bool:
    """Seal ``url`` as the account's egress proxy (``None``: none); whether it changed. A URL that
    is not a proxy address is a 400 that never repeats it (it may hold a password)."""
    if url is not None:
        try:
            url = checked_proxy_url(url)
        except ValueError as exc:
            raise SubLaneError("invalid_request", f"proxy_url: {exc}.") from None
    current = cipher.decrypt(account.proxy_url)["url"] if account.proxy_url is not None else None
    if url == current:
        return False
    account.proxy_url = cipher.encrypt({"url": url}) if url is not None else None
    account.proxy_shown = masked_proxy_url(url) if url is not None else None
    return True


@router.delete("/api/accounts/{account_id}", status_code=204)
def delete_account(account_id: PathId, request: Request, admin: AdminUser, db: DbSession) -> Response:
    """Delete an account with its credentials and runtime state; its history stays."""
    account: Account = get_or_404(db, Account, account_id, "account")
    revision = account.lifecycle_revision
    audit(db, request, admin, "account.delete", account_id, name=account.name, provider=account.provider)
    db.delete(account)
    db.commit()
    signals.account_changed.send(
        signals.AccountChanged(
            account_id=account_id, change=signals.AccountChange.DELETED, lifecycle_revision=revision
        )
    )
    return Response(status_code=204)


@router.patch("/api/accounts/{account_id}/limits")
def set_limits(
    account_id: PathId, body: AccountLimits, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Set ``max_concurrency`` (1–1000): model requests the account may serve at once (ADM-1)."""
    account: Account = get_or_404(db, Account, account_id, "account")
    limit = change(account.max_concurrency, body.max_concurrency)
    audit(db, request, admin, "account.limits", account_id, max_concurrency=limit)
    account.max_concurrency = body.max_concurrency
    account.updated_at = gateway_state(request).clock.time()
    db.add(account)
    db.commit()
    _changed(account, signals.AccountChange.LIMITS)
    return {"id": account.id, "max_concurrency": account.max_concurrency}
