"""The usage endpoints the Codex CLI reads for ``/status`` (CLIENT-5), answered from the pool.

The CLI asks ``{chatgpt_base_url}/api/codex/usage``, or ``{…}/wham/usage`` when that base URL
holds ``/backend-api`` (its backend client's two path styles), with its credential as a bearer.
Here the bearer is a SubLane key, and the answer is the key's group's pool as POOL-1 sees it, in
the shape the CLI deserialises (``RateLimitStatusPayload``, docs/clients.md): for each window of
the Responses-speaking accounts of the group, the mean used percent of the usable ones and the
soonest reset. Integers where the CLI reads ``i32``; no account id, name or e-mail.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from fastapi import APIRouter
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import Account, GroupAccount, QuotaObservation, SubLaneError, WireProtocol
from sublane_gateway._proxy import client_address
from sublane_gateway._state import gateway_state
from sublane_gateway.management._pool import USABLE_STATES
from sublane_gateway.management._runtime_view import account_state, load_accounts, quota_retry_at, quota_rows
from sublane_gateway.pipeline import ClientRuntime, JsonReply, client_runtime, sublane_error_reply

router = APIRouter(tags=["client: usage limits"])

#: The windows the CLI shows, as the Responses upstream's quota names them (main limit only).
WINDOWS = ("primary", "secondary")
#: Plan names the CLI's ``PlanType`` takes; anything else is sent as ``guest`` (it shows none).
CLI_PLANS = frozenset(
    {"free", "go", "plus", "pro", "team", "business", "enterprise", "edu", "education", "free_workspace"}
)


@dataclass
class _Loaded:
    accounts: list[Account]
    quota: dict[int, list[QuotaObservation]]


def _load(engine: Engine, group_id: int) -> _Loaded:
    accounts, quota = load_accounts(engine)
    with Session(engine) as db:
        members = set(db.exec(select(GroupAccount.account_id).where(col(GroupAccount.group_id) == group_id)))
    return _Loaded([account for account in accounts if account.id in members], quota)


def _window(rows: list[dict[str, Any]], now: float) -> dict[str, int] | None:
    used = [row["used_percent"] for row in rows if row["used_percent"] is not None]
    resets = [row["resets_at"] for row in rows if row["resets_at"] is not None]
    if not used and not resets:
        return None
    reset_at = int(min(resets)) if resets else 0
    seconds = [row["window_seconds"] for row in rows if row["window_seconds"]]
    return {
        "used_percent": round(sum(used) / len(used)) if used else 0,
        "limit_window_seconds": int(max(seconds)) if seconds else 0,
        "reset_after_seconds": max(0, reset_at - int(now)) if resets else 0,
        "reset_at": reset_at,
    }


def usage_payload(runtime: ClientRuntime, loaded: _Loaded, now: float) -> dict[str, Any]:
    """``RateLimitStatusPayload`` for the group: its Responses accounts' main windows."""
    responses = {
        name for name, adapter in runtime.adapters.items() if adapter.protocol is WireProtocol.RESPONSES
    }
    usable_rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    every_row: dict[str, list[dict[str, Any]]] = defaultdict(list)
    plans: Counter[str] = Counter()
    usable = total = 0
    for account in loaded.accounts:
        if account.provider not in responses or account.id is None:
            continue
        total += 1
        failing = quota_retry_at(runtime, account.id) is not None
        rows = quota_rows(loaded.quota.get(account.id, []), now, failed=failing)
        state = account_state(runtime, account, rows)["state"]
        fresh = [row for row in rows if row["fresh"] and row["main"] and row["window"] in WINDOWS]
        for row in fresh:
            every_row[row["window"]].append(row)
        if state in USABLE_STATES:
            usable += 1
            for row in fresh:
                usable_rows[row["window"]].append(row)
        plan = account.identity_plan or next((row["plan"] for row in rows if row["plan"]), None)
        if plan:
            plans[plan.lower()] += 1
    rate_limit: dict[str, Any] = {"allowed": usable > 0, "limit_reached": total > 0 and usable == 0}
    for name, key in zip(WINDOWS, ("primary_window", "secondary_window"), strict=True):
        window = _window(usable_rows[name], now) if usable else _window(every_row[name], now)
        if window is not None and total and not usable:
            window["used_percent"] = 100  # nothing usable: the pool is out until the soonest reset
        rate_limit[key] = window
    plan = plans.most_common(1)[0][0] if plans else "guest"
    return {"plan_type": plan if plan in CLI_PLANS else "guest", "rate_limit": rate_limit, "credits": None}


async def _usage(request: Request) -> Response:
    runtime = client_runtime(request)
    try:
        principal = await runtime.keys.authenticate(request.headers, address=client_address(request))
    except SubLaneError as error:
        reply: JsonReply = sublane_error_reply(WireProtocol.RESPONSES, error)
        return Response(reply.content, reply.status, reply.headers, media_type="application/json")
    state = gateway_state(request)
    now = state.clock.time()
    loaded = await anyio.to_thread.run_sync(_load, state.engine, principal.group_id)
    return JSONResponse(usage_payload(runtime, loaded, now))


@router.get("/api/codex/usage", response_model=None)
async def usage_plain_style(request: Request) -> Response:
    """The CLI's usage read with a plain base URL: the key's group's pool (CLIENT-5)."""
    return await _usage(request)


@router.get("/backend-api/wham/usage", response_model=None)
async def usage_backend_api_style(request: Request) -> Response:
    """The same read when the CLI's base URL ends in ``/backend-api`` (CLIENT-5)."""
    return await _usage(request)
