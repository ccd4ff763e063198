"""``GET /api/upstream-changes`` (CLIENT-7): what upstreams answered that SubLane does not know."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request

from sublane_gateway._sessions import AdminUser
from sublane_gateway._state import gateway_state
from sublane_gateway.pipeline._upstream_watch import upstream_changes

router = APIRouter(tags=["operations"])


@router.get("/api/upstream-changes")
async def list_upstream_changes(request: Request, _admin: AdminUser) -> dict[str, Any]:
    """Each unknown event type, field, error code, model or refused client version, per provider,
    with when it was first and last seen, how often, and one request that carried it."""
    items = await anyio.to_thread.run_sync(upstream_changes, gateway_state(request).engine)
    return {"items": items}
