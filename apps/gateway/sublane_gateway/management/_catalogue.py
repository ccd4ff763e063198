"""An account's model catalogue: read it and refresh it now (CAT-1)."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from sqlmodel import Session

from sublane_core import Account, SubLaneError
from sublane_gateway._sessions import AdminUser
from sublane_gateway._state import gateway_state
from sublane_gateway.management._models import PathId
from sublane_gateway.pipeline import ClientRuntime, client_runtime

router = APIRouter(tags=["accounts"])


def catalogue_answer(runtime: ClientRuntime, account_id: int) -> dict[str, Any]:
    state, discovered_at = runtime.catalog.state(account_id)
    models = runtime.catalog.cached(account_id)
    return {
        "account_id": account_id,
        "state": state,  # fresh | stale | over_age | unknown
        "discovered_at": discovered_at,
        "models": sorted(models) if models is not None else [],
    }


async def _account(request: Request, account_id: int) -> Account:
    engine = gateway_state(request).engine

    def load() -> Account | None:
        with Session(engine, expire_on_commit=False) as db:
            return db.get(Account, account_id)

    account = await anyio.to_thread.run_sync(load)
    if account is None:
        raise SubLaneError("not_found", f"No account with id {account_id}.")
    return account


@router.get("/api/accounts/{account_id}/models")
async def account_models(account_id: PathId, request: Request, _admin: AdminUser) -> dict[str, Any]:
    """The account's stored catalogue and whether it is fresh, stale, over-age or unknown."""
    await _account(request, account_id)
    return catalogue_answer(client_runtime(request), account_id)


@router.post("/api/accounts/{account_id}/models/refresh")
async def refresh_models(account_id: PathId, request: Request, _admin: AdminUser) -> dict[str, Any]:
    """Discover the account's catalogue now (a metadata call; no model slot). 503
    ``model_catalog_unavailable`` when the provider could not be read (the stored one stays)."""
    account = await _account(request, account_id)
    runtime = client_runtime(request)
    entry = await runtime.catalog.refresh(account_id, account.provider)
    if entry is None:
        failure = runtime.catalog.failure(account_id)
        raise failure or SubLaneError(
            "model_catalog_unavailable", "The provider's model list could not be read.", retry_after=30
        )
    return catalogue_answer(runtime, account_id)
