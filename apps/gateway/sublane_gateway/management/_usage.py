"""Usage summaries (TEAM-3): your own, and the team's for admins.

Handlers run in worker threads and first wait (briefly) for the calls already queued to be
written, so a call that has ended is in the summary its caller opens next.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sublane_core import SubLaneError
from sublane_gateway._sessions import AdminUser, CurrentUser
from sublane_history import RANGES, HistoryRecorder, TimingReader, UsageReader

router = APIRouter(tags=["team"])

FLUSH_TIMEOUT_S = 2.0
DEFAULT_DAYS = 30
_MAX_ID = 2**62


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
