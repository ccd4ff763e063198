"""The scheduling picture of every account (SPEC §14 runtime answer) and Clear cooldown (COOL-6)."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from sublane_core import Account, QuotaObservation, SubLaneError, signals
from sublane_gateway._sessions import AdminUser
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit
from sublane_gateway.management._models import PathId
from sublane_gateway.pipeline import ClientRuntime, client_runtime
from sublane_quota import is_fresh, pace_points

router = APIRouter(tags=["scheduling"])


def quota_rows(rows: list[QuotaObservation], now: float, *, failed: bool = False) -> list[dict[str, Any]]:
    """Quota windows with freshness and pace (QUOTA-10): points of usage ahead (+) of an even pace.

    Freshness is selection's own rule (QUOTA-3: 2 minutes, shortened by a reset; never a
    future-dated row). Pace is computed at the observation time, from the window length and reset,
    and only for a fresh, complete observation that is not past its reset, while the account's
    quota reads are not failing (``failed``); it is informational.
    """
    result = []
    for row in sorted(rows, key=lambda row: (row.model, not row.main, row.window)):
        fresh = is_fresh(row.observed_at, row.resets_at, now)
        pace = (
            pace_points(row.used_percent, row.window_seconds, row.resets_at, row.observed_at)
            if fresh and not failed
            else None
        )
        result.append(
            {
                "window": row.window
                if not row.model or row.model == row.window
                else f"{row.model}:{row.window}",
                "model": row.model or None,
                "main": row.main,
                "used_percent": row.used_percent,
                "limit_reached": row.limit_reached,
                "window_seconds": row.window_seconds,
                "resets_at": row.resets_at,
                "observed_at": row.observed_at,
                "fresh": fresh,
                "pace_points": pace,
                "plan": row.plan,
            }
        )
    return result


def _exhausted_until(runtime: ClientRuntime, account_id: int, quota: list[dict[str, Any]]) -> float | None:
    """QUOTA-9: when to look again if a fresh observation says the account is out of quota — for
    every model it has quota rows of (Antigravity: per model), or account-wide (Codex, Claude)."""
    observer = runtime.quota
    if observer is None:
        return None
    until = observer.exhausted_until(account_id, "")
    if until is not None:
        return until
    models = {row["model"] for row in quota if row["model"] and row["main"]}
    deadlines = [observer.exhausted_until(account_id, model) for model in models]
    if not models or any(deadline is None for deadline in deadlines):
        return None
    return min(deadline for deadline in deadlines if deadline is not None)


def quota_retry_at(runtime: ClientRuntime, account_id: int) -> float | None:
    """When a failing quota read of the account may be tried again (QUOTA-6); ``None`` when not failing."""
    refresher = runtime.quota.refresher if runtime.quota is not None else None
    return refresher.retry_at(account_id) if refresher is not None else None


def load_accounts(engine: Engine) -> tuple[list[Account], dict[int, list[QuotaObservation]]]:
    """Every account and its quota rows of the current lifecycle (blocking: run it in a thread)."""
    with Session(engine) as db:
        accounts = list(db.exec(select(Account).order_by(col(Account.id))))
        by_id = {account.id: account for account in accounts}
        quota: dict[int, list[QuotaObservation]] = {}
        for row in db.exec(select(QuotaObservation)):
            account = by_id.get(row.account_id)
            if account is not None and row.lifecycle_revision == account.lifecycle_revision:
                quota.setdefault(row.account_id, []).append(row)
    return accounts, quota


def account_state(
    runtime: ClientRuntime,
    account: Account,
    quota: list[dict[str, Any]],
    shared: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One account's entry of the runtime answer; ``shared``: its in-flight calls and waiters over
    every replica (SCALE-2), else this process's."""
    assert account.id is not None
    scheduler = runtime.scheduler
    cooldowns = scheduler.cooldowns
    in_flight = runtime.leases.in_flight(account.id) if shared is None else shared[0]
    cooldown = cooldowns.active(account.id)
    limited = cooldowns.limited_models(account.id)
    retry_at = runtime.vault.refresh_retry_at(account.id)
    reauth = account.auth_state == "reauth_required" or runtime.vault.needs_reauth(account.id)
    recheck_at = _exhausted_until(runtime, account.id, quota)
    if not account.enabled:
        state = "disabled"
    elif reauth:
        state = "reauth_required"
    elif cooldown is not None:
        state = "cooling"
    elif retry_at is not None:
        state = "refresh_backoff"
    elif recheck_at is not None:
        state = "quota_exhausted"
    elif limited:
        state = "model_limited"
    elif in_flight >= account.max_concurrency:
        state = "busy"
    else:
        state = "ready"
    return {
        "id": account.id,
        "name": account.name,
        "provider": account.provider,
        "enabled": account.enabled,
        "state": state,
        "in_flight": in_flight,
        "max_concurrency": account.max_concurrency,
        "waiters": scheduler.room.waiting(account.id) if shared is None else shared[1],
        "cooldown_until": cooldown.until if cooldown else None,
        "cooldown_reason": cooldown.reason if cooldown else None,
        "limited_models": [{"model": c.model, "until": c.until, "reason": c.reason} for c in limited],
        "auth_state": "reauth_required" if reauth else account.auth_state,
        "refresh_retry_at": retry_at,
        "quota": quota,
        "quota_recheck_at": recheck_at,  # QUOTA-7: when an exhausted account is looked at again
        "quota_retry_at": quota_retry_at(runtime, account.id),  # a failing quota read's next try
        "proxy_url": account.proxy_shown,  # EGRESS-1 (the password as ***)
        "egress_error": _egress_error(runtime, account.id),  # EGRESS-2
    }


def _egress_error(runtime: ClientRuntime, account_id: int) -> dict[str, Any] | None:
    """The last failure of the account's egress proxy, until it works again."""
    failed = runtime.egress_errors.get(account_id)
    return {"at": failed[0], "message": failed[1]} if failed is not None else None


def runtime_accounts(
    runtime: ClientRuntime,
    accounts: list[Account],
    quota: dict[int, list[QuotaObservation]],
    shared: dict[int, tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """The runtime answer of SPEC §14 (also what ``/metrics`` reports, OPS-8). On the event loop.

    ``shared`` (:func:`shared_counts`): in-flight calls and waiters over every replica."""
    now = runtime.clock.time()
    admission = runtime.scheduler.admission
    return {
        "workspace": {
            "in_use": admission.in_use,
            "capacity": admission.capacity,
            "waiting": runtime.scheduler.room.waiting(),
        },
        "accounts": [
            account_state(
                runtime,
                account,
                quota_rows(
                    quota.get(account.id or 0, []),
                    now,
                    failed=quota_retry_at(runtime, account.id or 0) is not None,
                ),
                shared.get(account.id or 0) if shared is not None else None,
            )
            for account in accounts
        ],
    }


@router.get("/api/accounts/runtime")
async def runtime_view(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """Per-account scheduling state, in-flight / limit, waiters, cooldowns and quota."""
    runtime = client_runtime(request)
    accounts, quota = await anyio.to_thread.run_sync(load_accounts, gateway_state(request).engine)
    return runtime_accounts(runtime, accounts, quota, await shared_counts(runtime, accounts))


async def shared_counts(runtime: ClientRuntime, accounts: list[Account]) -> dict[int, tuple[int, int]] | None:
    """With replicas (SCALE-2): each account's in-flight calls and waiters over all of them, read
    from Redis in one round trip; ``None`` in one process, or when Redis is out of reach (then the
    view shows this replica's own counts rather than failing)."""
    coordination = runtime.coordination
    if coordination is None:
        return None
    try:
        return await coordination.limits.counts(
            [account.id for account in accounts if account.id is not None]
        )
    except SubLaneError:
        return None


@router.post("/api/accounts/{account_id}/resume")
async def resume(account_id: PathId, request: Request, admin: AdminUser) -> dict[str, Any]:
    """Clear cooldown: account and model cooldowns and failure streaks; the runtime revision advances.

    It does not enable the account, repair authorization or restore subscription quota (COOL-6).
    """
    runtime = client_runtime(request)
    engine = gateway_state(request).engine
    cooldown = runtime.scheduler.cooldowns.active(account_id)
    limited = len(runtime.scheduler.cooldowns.limited_models(account_id))

    def load_and_audit() -> Account | None:
        with Session(engine, expire_on_commit=False) as db:
            account = db.get(Account, account_id)
            if account is not None:
                cleared = cooldown.reason if cooldown is not None else None
                audit(
                    db, request, admin, "account.resume", account_id, cooldown=cleared, limited_models=limited
                )
                db.commit()
            return account

    account = await anyio.to_thread.run_sync(load_and_audit)
    if account is None:
        raise SubLaneError("not_found", f"No account with id {account_id}.")
    runtime.scheduler.cooldowns.clear(account_id)
    runtime.scheduler.offer(account_id)
    signals.account_changed.send(
        signals.AccountChanged(
            account_id=account_id,
            change=signals.AccountChange.RESUMED,
            lifecycle_revision=account.lifecycle_revision,
            max_concurrency=account.max_concurrency,
        )
    )
    return account_state(runtime, account, [])
