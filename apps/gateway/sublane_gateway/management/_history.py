"""Request history (SPEC §13, §14): personal and admin lists, filter choices and single records.

Handlers run in worker threads: each first waits (briefly) for the records already queued to be
written, so a call that has ended is in the history its caller opens next.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sublane_core import SubLaneError, User
from sublane_gateway._sessions import AdminUser, CurrentUser
from sublane_history import (
    HistoryFilter,
    HistoryReader,
    HistoryRecorder,
    InvalidFilter,
    choices_view,
    record_view,
)

router = APIRouter(tags=["history"])

FLUSH_TIMEOUT_S = 2.0
MAX_REQUEST_ID = 64


def _reader(request: Request) -> HistoryReader:
    recorder: HistoryRecorder = request.app.state.history
    recorder.flush(FLUSH_TIMEOUT_S)
    reader: HistoryReader = request.app.state.history_reader
    return reader


def _filters(request: Request, *, admin: bool) -> HistoryFilter:
    try:
        return HistoryFilter.from_query(request.query_params, admin=admin)
    except InvalidFilter as invalid:
        raise SubLaneError("invalid_request", str(invalid)) from None


def _viewer(user: User) -> int:
    assert user.id is not None
    return user.id


def _page(request: Request, filters: HistoryFilter, viewer_id: int | None) -> dict[str, Any]:
    page = _reader(request).page(filters, viewer_id=viewer_id)
    personal = viewer_id is not None
    return {
        "items": [record_view(row, personal=personal) for row in page.items],
        "next_cursor": page.next_cursor,
    }


def _one(request: Request, request_id: str, viewer_id: int | None) -> dict[str, Any]:
    row = None
    if len(request_id) <= MAX_REQUEST_ID:
        row = _reader(request).get(request_id, viewer_id=viewer_id)
    if row is None:
        raise SubLaneError("not_found", "No such request in the retained history.")
    return record_view(row, personal=viewer_id is not None)


@router.get("/api/me/requests")
def my_requests(request: Request, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: your own calls, newest first, 50 a page.

    Filters: `outcome`, `model` (exact), `key_id`, `request_id`, `from` (inclusive) and `until`
    (exclusive) in Unix seconds; `cursor` is the `next_cursor` of the previous page. Subscription
    accounts are not shown.
    """
    return _page(request, _filters(request, admin=False), _viewer(user))


@router.get("/api/requests")
def all_requests(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """Everyone's calls, newest first, 50 a page; the personal filters plus `user_id` and `account_id`."""
    return _page(request, _filters(request, admin=True), None)


@router.get("/api/me/requests/filters")
def my_request_filters(request: Request, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: the models, keys and outcomes found in your retained history."""
    return choices_view(_reader(request).choices(viewer_id=_viewer(user)), personal=True)


@router.get("/api/requests/filters")
def request_filters(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """Models, keys, outcomes, members and accounts found in the retained history."""
    return choices_view(_reader(request).choices(viewer_id=None), personal=False)


@router.get("/api/me/requests/{request_id}")
def my_request(request_id: str, request: Request, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: one of your calls by its `req_…` ID, with its routing explanation."""
    return _one(request, request_id, _viewer(user))


@router.get("/api/requests/{request_id}")
def one_request(request_id: str, request: Request, _admin: AdminUser) -> dict[str, Any]:
    """One call by its `req_…` ID, with its routing explanation."""
    return _one(request, request_id, None)
