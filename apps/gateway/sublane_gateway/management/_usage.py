"""Usage summaries (TEAM-3): your own, and the team's for admins.

Handlers run in worker threads and first wait (briefly) for the calls already queued to be
written, so a call that has ended is in the summary its caller opens next.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session, select

from sublane_core import Account, SubLaneError
from sublane_gateway._sessions import AdminUser, CurrentUser
from sublane_gateway._state import gateway_state
from sublane_history import RANGES, HistoryRecorder, TimingReader, UsageReader, money

router = APIRouter(tags=["team"])

FLUSH_TIMEOUT_S = 2.0
DEFAULT_DAYS = 30
_MAX_ID = 2**62
MONTH = re.compile(r"[0-9]{4}-[0-9]{2}")


def _reader(request: Request) -> UsageReader:
    recorder: HistoryRecorder = request.app.state.history
    recorder.flush(FLUSH_TIMEOUT_S)
    reader: UsageReader = request.app.state.usage_reader
    return reader


def _days(request: Request) -> int:
    raw = request.query_params.get("days")
    if raw is None or raw == "":
        return DEFAULT_DAYS
    if raw not in {str(days) for days in RANGES}:
        raise SubLaneError("invalid_request", "days: must be 1, 7, 30 or 90")
    return int(raw)


def _user_id(request: Request) -> int | None:
    raw = request.query_params.get("user_id")
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or not 1 <= int(raw) <= _MAX_ID:
        raise SubLaneError("invalid_request", "user_id: must be a user id")
    return int(raw)


@router.get("/api/me/usage")
def my_usage(request: Request, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: your calls over the last `days` (1, 7, 30 or 90) UTC days: totals, per day, per
    model, provider and group, and the hour-of-week heatmap (UTC, Monday first)."""
    assert user.id is not None
    days = _days(request)
    return _reader(request).summary(days, viewer_id=user.id)


@router.get("/api/usage")
def team_usage(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """The team's calls over the last `days` UTC days, also per member; `user_id` narrows it to one.

    `timing`: per provider, p50 and p95 of where the calls' time went (OPS-13), over the last
    `days` × 24 hours."""
    days, user_id = _days(request), _user_id(request)
    summary = _reader(request).summary(days, user_id=user_id)
    timing: TimingReader = request.app.state.timing_reader
    summary["timing"] = timing.percentiles(days, user_id=user_id)
    return summary


def _month(request: Request) -> tuple[str, float, float]:
    """The ``month`` parameter (``YYYY-MM``, default: this UTC month) and its bounds in Unix seconds."""
    raw = request.query_params.get("month")
    if raw is None or raw == "":
        today = dt.datetime.fromtimestamp(gateway_state(request).clock.time(), dt.UTC)
        raw = f"{today.year:04d}-{today.month:02d}"
    if not MONTH.fullmatch(raw):
        raise SubLaneError("invalid_request", "month: must be YYYY-MM")
    year, month = int(raw[:4]), int(raw[5:])
    if not (1970 <= year <= 9999 and 1 <= month <= 12):
        raise SubLaneError("invalid_request", "month: must be YYYY-MM")
    first = dt.datetime(year, month, 1, tzinfo=dt.UTC)
    # the month's length in seconds, not the next month's first day: 9999-12 has none a datetime holds
    start = first.timestamp()
    return raw, start, start + calendar.monthrange(year, month)[1] * 86_400


def _ratio(cost: float | None, price: float | None) -> float | None:
    return None if cost is None or not price else round(cost / price, 4)


@router.get("/api/usage/value")
def usage_value(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """COST-3: per account and per provider in a UTC ``month`` (``YYYY-MM``): the API-equivalent
    cost served (COST-2; ``null`` when nothing served was priced), the subscription's monthly price
    and cost ÷ price (``null`` without a price)."""
    month, start, until = _month(request)
    served = {row["account_id"]: row for row in _reader(request).account_costs(start, until)}
    with Session(gateway_state(request).engine) as db:
        accounts = {account.id: account for account in db.exec(select(Account))}
    rows: list[dict[str, Any]] = []
    for account_id in sorted(set(accounts) | set(served), key=lambda found: found or 0):
        account, used = accounts.get(account_id), served.get(account_id)
        price = account.monthly_price_usd if account is not None else None
        cost = used["cost_usd"] if used is not None else 0.0
        rows.append(
            {
                "account_id": account_id,
                "account_name": account.name if account is not None else None,
                "provider": account.provider if account is not None else used and used["provider"],
                "requests": used["requests"] if used is not None else 0,
                "unpriced_tokens": used["unpriced_tokens"] if used is not None else 0,
                "cost_usd": cost,
                "monthly_price_usd": price,
                "ratio": _ratio(cost, price),
            }
        )
    providers: dict[str, dict[str, Any]] = {}
    for row in rows:
        total = providers.setdefault(
            row["provider"],
            {"provider": row["provider"], "accounts": 0, "cost_usd": None, "monthly_price_usd": None},
        )
        total["accounts"] += 1
        if row["cost_usd"] is not None:
            total["cost_usd"] = money((total["cost_usd"] or 0.0) + row["cost_usd"])
        if row["monthly_price_usd"] is not None:
            total["monthly_price_usd"] = (total["monthly_price_usd"] or 0.0) + row["monthly_price_usd"]
    for total in providers.values():
        total["ratio"] = _ratio(total["cost_usd"], total["monthly_price_usd"])
    return {
        "month": month,
        "accounts": rows,
        "providers": [providers[name] for name in sorted(providers)],
    }
