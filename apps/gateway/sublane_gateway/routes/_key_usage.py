"""``GET /v1/usage`` (COST-6): a member's use, authenticated by any of their keys, for status lines
and desktop tools that have a key and no web session.

``windows``: the member's input + output tokens and API-equivalent cost (COST-2; ``null`` while
nothing in the window was priced) in the rolling 5 hours and 7 days ending now (from the request
records) and in this UTC day and month (from the usage summaries), each with the smallest budget
limit (TEAM-4, COST-5) of that period that covers every model in the key's group, per unit
(``null``: none). ``pool``: POOL-1's items of the key's group. ``metered`` (PAID-3): this UTC
month's metered spend and caps of the member and of the key's group, and when they reset.
"""

from __future__ import annotations

from typing import Any, Final

import anyio.to_thread
import sqlalchemy as sa
from fastapi import APIRouter
from sqlalchemy.engine import Engine
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sublane_core import RequestRecord, SubLaneError, UsageDay, WireProtocol
from sublane_gateway._proxy import client_address
from sublane_gateway._state import gateway_state
from sublane_gateway.management._metered import key_metered_view
from sublane_gateway.management._pool import group_pool
from sublane_gateway.pipeline import client_runtime, sublane_error_reply
from sublane_gateway.routes._replies import to_response
from sublane_history import BudgetPeriod, TokenBudgets, money, period_bounds

router = APIRouter(tags=["client: usage"])

ROLLING: Final = {"5h": 5 * 3600, "7d": 7 * 86_400}
_RECORDS = RequestRecord.__table__  # type: ignore[attr-defined]
_DAYS = UsageDay.__table__  # type: ignore[attr-defined]


def _sums(engine: Engine, user_id: int, now: float) -> dict[str, tuple[int, float | None]]:
    """``(tokens, cost)`` of the member per window."""
    sums: dict[str, tuple[int, float | None]] = {}
    records, days = _RECORDS, _DAYS
    tokens = sa.func.coalesce(sa.func.sum(records.c.input_tokens), 0) + sa.func.coalesce(
        sa.func.sum(records.c.output_tokens), 0
    )
    day_tokens = sa.func.coalesce(sa.func.sum(days.c.input_tokens), 0) + sa.func.coalesce(
        sa.func.sum(days.c.output_tokens), 0
    )
    with engine.connect() as connection:
        for name, span in ROLLING.items():
            query = sa.select(tokens, sa.func.sum(records.c.cost_usd)).where(
                records.c.user_id == user_id, records.c.started_at >= now - span
            )
            used, cost = connection.execute(query).one()
            sums[name] = (int(used or 0), money(cost))
        for period in (BudgetPeriod.DAY, BudgetPeriod.MONTH):
            start = int(period_bounds(period, now)[0])
            query = sa.select(day_tokens, sa.func.sum(days.c.cost_usd)).where(
                days.c.user_id == user_id, days.c.day >= start
            )
            used, cost = connection.execute(query).one()
            sums[period.value] = (int(used or 0), money(cost))
    return sums


def _limits(budgets: TokenBudgets | None, user_id: int, group_id: int) -> dict[str, dict[str, Any]]:
    """The smallest enabled limit per period and unit among the member's rules for every model."""
    limits: dict[str, dict[str, Any]] = {
        name: {"tokens": None, "cost_usd": None} for name in (*ROLLING, "day", "month")
    }
    for rule in budgets.rules(user_id) if budgets is not None else ():
        if not rule.enabled or rule.model is not None or rule.group_id not in (None, group_id):
            continue
        field = "cost_usd" if rule.unit == "usd" else "tokens"
        value = rule.usd_limit if rule.unit == "usd" else rule.limit
        current = limits[rule.period.value][field]
        if current is None or value < current:
            limits[rule.period.value][field] = value
    return limits


@router.get("/v1/usage", response_model=None)
async def key_usage(request: Request) -> Response:
    """``{"member","key","windows":{"5h","7d","day","month"},"pool"}`` for the presented key."""
    runtime = client_runtime(request)
    try:
        principal = await runtime.keys.authenticate(request.scope["headers"], address=client_address(request))
    except SubLaneError as error:
        return to_response(sublane_error_reply(WireProtocol.RESPONSES, error))
    recorder = request.app.state["history"]
    await recorder.written()  # the member's calls that ended are counted
    state = gateway_state(request)
    now = state.clock.time()
    sums = await anyio.to_thread.run_sync(_sums, state.engine, principal.user_id, now)
    limits = _limits(runtime.budgets, principal.user_id, principal.group_id)
    windows = {
        name: {"tokens": tokens, "cost_usd": cost, "limit": limits[name]}
        for name, (tokens, cost) in sums.items()
    }
    pool = await group_pool(request, principal.user_id, principal.group_id)
    metered = await anyio.to_thread.run_sync(key_metered_view, request, principal.user_id, principal.group_id)
    return JSONResponse(
        {
            "member": {"id": principal.user_id, "username": principal.username},
            "key": {"id": principal.key_id, "name": principal.key_name, "group_id": principal.group_id},
            "windows": windows,
            "pool": pool,
            "metered": metered,
        }
    )
