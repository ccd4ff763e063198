"""``GET /api/setup/checklist`` (CONNECT-3): the first-run checklist admins land on.

Four steps, each ticked by what the workspace holds: an account; a key that is not revoked; a call
from a client (any record: a client reached SubLane with a key); a successful model call. ``done``
when all four are; the web then stops showing the checklist first.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from sublane_core import Account, ApiKey, Outcome, RequestRecord
from sublane_gateway._sessions import AdminUser
from sublane_gateway._state import gateway_state
from sublane_history import HistoryRecorder

router = APIRouter(tags=["setup"])

FLUSH_TIMEOUT_S = 2.0

#: (id, title, the web page that does it)
STEPS = (
    ("account", "Add an account", "/accounts"),
    ("key", "Create a key", "/keys"),
    ("connect", "Connect a client", "/keys"),
    ("first_call", "First call seen", "/admin/requests"),
)


def _exists(db: Session, statement: Any) -> bool:
    return db.exec(statement.limit(1)).first() is not None


def _ticks(engine: Engine) -> dict[str, bool]:
    with Session(engine) as db:
        return {
            "account": _exists(db, select(Account.id)),
            "key": _exists(db, select(ApiKey.id).where(col(ApiKey.revoked_at).is_(None))),
            "connect": _exists(db, select(RequestRecord.id)),
            "first_call": _exists(
                db, select(RequestRecord.id).where(col(RequestRecord.outcome) == Outcome.SUCCESS.value)
            ),
        }


@router.get("/api/setup/checklist")
async def checklist(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """``{"done", "steps": [{"id","title","href","done"}]}``."""
    recorder: HistoryRecorder = request.app.state.history
    await anyio.to_thread.run_sync(recorder.flush, FLUSH_TIMEOUT_S)  # a call just made is counted
    ticks = await anyio.to_thread.run_sync(_ticks, gateway_state(request).engine)
    steps = [{"id": step, "title": title, "href": href, "done": ticks[step]} for step, title, href in STEPS]
    return {"done": all(ticks.values()), "steps": steps}
