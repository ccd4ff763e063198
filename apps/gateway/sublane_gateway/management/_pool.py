"""``GET /api/me/pool`` (POOL-1): the room in the member's pools, without a word about any account.

For each group of the member's live keys and each provider with accounts in it: how many accounts
are usable for a new conversation now (enabled, authorized, not cooling down, not backing off a
refresh, not out of quota by a fresh observation — a busy one is usable: a call would wait for it),
how many there are, each quota window as the fresh observations of those accounts show it (mean
use, how many are exhausted, the soonest reset), and the member's share of the group's tokens in
the last five hours, from the usage summaries (``usage_group_hours``: right with history off and
however many records history keeps). Account ids, names and e-mails never appear.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import sqlalchemy as sa
from fastapi import APIRouter, Request
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from sublane_core import Account, ApiKey, GroupAccount, QuotaObservation, ResourceGroup
from sublane_gateway._sessions import CurrentUser
from sublane_gateway._state import gateway_state
from sublane_gateway.management._runtime_view import account_state, load_accounts, quota_retry_at, quota_rows
from sublane_gateway.pipeline import ClientRuntime, client_runtime
from sublane_history import UsageReader

router = APIRouter(tags=["personal"])

#: Account states in which an account may be chosen for a new conversation (POOL-1: "usable").
USABLE_STATES = frozenset({"ready", "busy", "model_limited"})
SHARE_HOURS = 5


def _windows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fresh quota rows of one provider's accounts, by window: mean use, exhausted, soonest reset."""
    by_window: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["fresh"]:
            by_window[row["window"]].append(row)
    windows = []
    for name, observed in sorted(by_window.items()):
        used = [row["used_percent"] for row in observed if row["used_percent"] is not None]
        exhausted = [row for row in observed if row["limit_reached"] or (row["used_percent"] or 0.0) >= 100.0]
        resets = [row["resets_at"] for row in (exhausted or observed) if row["resets_at"] is not None]
        windows.append(
            {
                "window": name,
                "mean_used_percent": round(sum(used) / len(used), 1) if used else None,
                "accounts_exhausted": len(exhausted),
                "soonest_reset_at": min(resets) if resets else None,
            }
        )
    return windows


@dataclass
class _Loaded:
    """What the pool view reads from the database (in a worker thread)."""

    accounts: dict[int, Account]
    quota: dict[int, list[QuotaObservation]]
    groups: list[ResourceGroup]
    in_group: dict[int, list[int]]
    shares: dict[int, float | None]


def _load(engine: Engine, reader: UsageReader, user_id: int, now: float) -> _Loaded:
    accounts, quota = load_accounts(engine)
    with Session(engine) as db:
        live_keys = select(ApiKey.group_id).where(
            col(ApiKey.user_id) == user_id,
            col(ApiKey.revoked_at).is_(None),
            sa.or_(col(ApiKey.expires_at).is_(None), col(ApiKey.expires_at) > now),
        )
        groups = list(
            db.exec(
                select(ResourceGroup)
                .where(col(ResourceGroup.id).in_(live_keys))
                .order_by(col(ResourceGroup.id))
            )
        )
        ids = [group.id for group in groups]
        members = db.exec(
            select(GroupAccount.group_id, GroupAccount.account_id).where(col(GroupAccount.group_id).in_(ids))
        ).all()
    shares = reader.group_shares(user_id, [group.id or 0 for group in groups], SHARE_HOURS)
    in_group: dict[int, list[int]] = defaultdict(list)
    for group_id, account_id in members:
        in_group[group_id].append(account_id)
    by_id = {account.id: account for account in accounts if account.id is not None}
    return _Loaded(by_id, quota, groups, in_group, shares)


def _pool(runtime: ClientRuntime, loaded: _Loaded, now: float) -> list[dict[str, Any]]:
    """The answer's items, from the runtime's state of each account (on the event loop)."""
    answer = []
    for group in loaded.groups:
        group_id = group.id or 0
        by_provider: dict[str, list[tuple[str, list[dict[str, Any]]]]] = defaultdict(list)
        for account_id in sorted(loaded.in_group.get(group_id, [])):
            account = loaded.accounts.get(account_id)
            if account is None:
                continue
            failing = quota_retry_at(runtime, account_id) is not None
            rows = quota_rows(loaded.quota.get(account_id, []), now, failed=failing)
            by_provider[account.provider].append((account_state(runtime, account, rows)["state"], rows))
        for provider, states in sorted(by_provider.items()):
            answer.append(
                {
                    "group_id": group_id,
                    "group_name": group.name,
                    "provider": provider,
                    "accounts_usable": sum(state in USABLE_STATES for state, _ in states),
                    "accounts_total": len(states),
                    "windows": _windows([row for _, rows in states for row in rows]),
                    "my_share_percent": loaded.shares[group_id],
                }
            )
    return answer


@router.get("/api/me/pool")
async def my_pool(request: Request, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: ``{"items": [...]}``, one item per group of your live keys and provider in it
    (POOL-1) — never an account's id, name or e-mail."""
    runtime = client_runtime(request)
    state = gateway_state(request)
    now = state.clock.time()
    assert user.id is not None
    reader: UsageReader = request.app.state.usage_reader
    loaded = await anyio.to_thread.run_sync(_load, state.engine, reader, user.id, now)
    return {"items": _pool(runtime, loaded, now)}


async def group_pool(request: Request, user_id: int, group_id: int) -> list[dict[str, Any]]:
    """POOL-1's items of one group of a member's live keys (one per provider in it), for the client
    routes that show a key its pool (Code Assist's quota reads, CLIENT-6)."""
    runtime = client_runtime(request)
    state = gateway_state(request)
    now = state.clock.time()
    reader: UsageReader = request.app.state["usage_reader"]
    loaded = await anyio.to_thread.run_sync(_load, state.engine, reader, user_id, now)
    return [item for item in _pool(runtime, loaded, now) if item["group_id"] == group_id]
