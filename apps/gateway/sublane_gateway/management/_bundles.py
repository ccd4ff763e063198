"""Account bundles (BULK-1/2): export chosen accounts encrypted with a passphrase; import a bundle.

Export carries each account's provider, name, credentials (the stored bundle, opened with this
installation's key and sealed again with the passphrase's), limit, enabled flag, identity, proxy and
group names. Import makes new accounts (a taken name gets a ``-2``, ``-3``… suffix), in the groups
given or else the groups of the same names here, in one transaction: a wrong passphrase or a damaged
file imports nothing. Both are audited; neither the passphrase nor any credential is ever logged.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request, Response
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select
from starlette.datastructures import UploadFile

from sublane_core import (
    DEFAULT_MAX_CONCURRENCY,
    Account,
    GroupAccount,
    ResourceGroup,
    SubLaneError,
    User,
    signals,
)
from sublane_gateway._bundles import MAX_BUNDLE_BYTES, VERSION, BadBundle, open_bundle, seal_bundle
from sublane_gateway._digits import ascii_int
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway._state import GatewayState, gateway_state
from sublane_gateway.management._accounts import set_proxy
from sublane_gateway.management._audit import record_action
from sublane_gateway.management._models import BundleExport
from sublane_gateway.management._names import free_name
from sublane_gateway.pipeline import client_runtime
from sublane_providers import CredentialFormatError, UnknownProviderError, parse_credentials

router = APIRouter(tags=["accounts"])
_log = logging.getLogger("sublane.bundles")


def _entry(state: GatewayState, account: Account, groups: list[str]) -> dict[str, Any]:
    return {
        "provider": account.provider,
        "name": account.name,
        "credentials": state.cipher.decrypt(account.credentials),
        "credentials_expires_at": account.credentials_expires_at,
        "enabled": account.enabled,
        "max_concurrency": account.max_concurrency,
        "identity": {
            "email": account.identity_email,
            "plan": account.identity_plan,
            "subject": account.identity_subject,
        },
        "proxy_url": state.cipher.decrypt(account.proxy_url)["url"] if account.proxy_url else None,
        "groups": groups,
    }


@router.post("/api/accounts/export", response_model=None)
def export_accounts(body: BundleExport, request: Request, admin: AdminUser, db: DbSession) -> Response:
    """A bundle of the chosen accounts (``account_ids`` ``null``: all), encrypted with ``passphrase``
    (12–256 characters). ``application/octet-stream``; keep it as safe as the accounts."""
    state = gateway_state(request)
    query = select(Account).order_by(col(Account.id))
    if body.account_ids is not None:
        query = query.where(col(Account.id).in_(body.account_ids))
    accounts = list(db.exec(query).all())
    if body.account_ids is not None and len(accounts) != len(set(body.account_ids)):
        raise SubLaneError("not_found", "An account of account_ids does not exist.")
    names: dict[int, list[str]] = {account.id: [] for account in accounts if account.id is not None}
    rows = db.exec(
        select(GroupAccount.account_id, ResourceGroup.name)
        .join(ResourceGroup, col(ResourceGroup.id) == col(GroupAccount.group_id))
        .where(col(GroupAccount.account_id).in_(list(names)))
    )
    for account_id, group_name in rows:
        names[account_id].append(group_name)
    document = {
        "version": VERSION,
        "exported_at": state.clock.time(),
        "accounts": [
            _entry(state, account, sorted(names[account.id]))
            for account in accounts
            if account.id is not None
        ],
    }
    data = seal_bundle(body.passphrase, document)
    record_action(
        db, actor=admin, action="account.export", summary={"account_ids": sorted(names), "count": len(names)}
    )
    db.commit()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(state.clock.time()))
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"content-disposition": f'attachment; filename="sublane-accounts-{stamp}.bundle"'},
    )


@router.post("/api/accounts/import-bundle")
async def import_bundle(request: Request, admin: AdminUser) -> dict[str, Any]:
    """Import a bundle (multipart: ``file``, ``passphrase``, optional ``group_ids``, comma-separated
    or repeated) → ``{"imported":[{"id","name"}],"skipped":[{"name","reason"}]}``; 400 ``bad_bundle``
    for a wrong passphrase or a damaged file, and then nothing is imported."""
    async with request.form(max_files=1, max_fields=64) as form:
        upload = form.get("file")
        passphrase = form.get("passphrase")
        if not isinstance(upload, UploadFile) or not isinstance(passphrase, str) or not passphrase:
            raise SubLaneError("invalid_request", "Send the bundle as `file` and its `passphrase`.")
        data = await upload.read(MAX_BUNDLE_BYTES + 1)
        group_ids = _group_ids(form.getlist("group_ids"))
    try:
        document = await anyio.to_thread.run_sync(open_bundle, passphrase, data)
    except BadBundle as exc:
        _log.info("bundle refused: %s", exc)
        raise SubLaneError("bad_bundle") from None
    state = gateway_state(request)
    providers = set(client_runtime(request).adapters)
    imported, skipped, created = await anyio.to_thread.run_sync(
        _import, state, admin, document["accounts"], group_ids, providers
    )
    for account in created:
        assert account.id is not None
        signals.account_changed.send(
            signals.AccountChanged(
                account_id=account.id,
                change=signals.AccountChange.CREATED,
                lifecycle_revision=account.lifecycle_revision,
                max_concurrency=account.max_concurrency,
            )
        )
    return {"imported": imported, "skipped": skipped}


def _group_ids(values: list[Any]) -> list[int] | None:
    ids: list[int] = []
    for value in values:
        if not isinstance(value, str):
            raise SubLaneError("invalid_request", "group_ids are numbers.")
        ids.extend(ascii_int(part, "group_ids") for part in value.replace(",", " ").split())  # OPS-1
    return ids or None


def _import(
    state: GatewayState,
    admin: User,
    entries: list[Any],
    group_ids: list[int] | None,
    providers: set[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Account]]:
    now = state.clock.time()
    imported: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    created: list[Account] = []
    with Session(state.engine) as db:
        groups = {
            group.name: group.id for group in db.exec(select(ResourceGroup)).all() if group.id is not None
        }
        if group_ids is not None and not set(group_ids) <= set(groups.values()):
            raise SubLaneError("not_found", "A group of group_ids does not exist.")
        taken = {name.lower() for name in db.exec(select(Account.name)).all()}
        for entry in entries:
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or not isinstance(name, str) or not name:
                skipped.append({"name": None, "reason": "invalid_entry"})
                continue
            if entry.get("provider") not in providers:
                skipped.append({"name": name, "reason": "unknown_provider"})
                continue
            if not isinstance(entry.get("credentials"), dict):
                skipped.append({"name": name, "reason": "invalid_entry"})
                continue
            try:  # BULK-3: checked as POST /api/accounts/import checks a credential file
                parsed = parse_credentials(str(entry["provider"]), entry["credentials"])
            except CredentialFormatError:
                skipped.append({"name": name, "reason": "invalid_credentials"})
                continue
            except UnknownProviderError:
                skipped.append({"name": name, "reason": "unknown_provider"})
                continue
            final = free_name(name, taken, 64)
            taken.add(final.lower())
            found = entry.get("identity")
            identity: dict[str, Any] = found if isinstance(found, dict) else {}
            limit = entry.get("max_concurrency")
            account = Account(
                provider=str(entry["provider"]),
                name=final,
                enabled=entry.get("enabled") is not False,
                max_concurrency=limit
                if isinstance(limit, int) and 1 <= limit <= 1000
                else DEFAULT_MAX_CONCURRENCY,
                # what the provider's parser made of the fields it knows wins; fields a refresh
                # added beside them (a project, a tier) are kept
                credentials=state.cipher.encrypt({**entry["credentials"], **parsed.bundle}),
                credentials_expires_at=_number(entry.get("credentials_expires_at")) or parsed.expires_at,
                identity_email=_text(identity.get("email"), 256) or parsed.identity.email,
                identity_plan=_text(identity.get("plan"), 64) or parsed.identity.plan,
                identity_subject=_text(identity.get("subject"), 256) or parsed.identity.subject,
                created_at=now,
                updated_at=now,
            )
            proxy = entry.get("proxy_url")
            if isinstance(proxy, str) and proxy:
                try:
                    set_proxy(account, proxy, state.cipher)  # EGRESS-1: the account keeps its egress
                except SubLaneError:
                    skipped.append({"name": name, "reason": "invalid_proxy_url"})
                    taken.discard(final.lower())
                    continue
            db.add(account)
            db.flush()
            assert account.id is not None
            wanted = (
                group_ids
                if group_ids is not None
                else [
                    groups[group]
                    for group in entry.get("groups") or []
                    if isinstance(group, str) and group in groups
                ]
            )
            db.add_all(
                GroupAccount(group_id=group_id, account_id=account.id) for group_id in sorted(set(wanted))
            )
            record_action(
                db,
                actor=admin,
                action="account.import_bundle",
                object_id=account.id,
                summary={"name": final, "provider": account.provider, "group_ids": sorted(set(wanted))},
                at=now,
            )
            created.append(account)
            imported.append({"id": account.id, "name": final})
        try:
            db.commit()
        except IntegrityError:
            db.rollback()
            raise SubLaneError(
                "invalid_request", "The accounts changed meanwhile; nothing was imported."
            ) from None
        for account in created:
            db.refresh(account)
    return imported, skipped, created


def _text(value: object, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
