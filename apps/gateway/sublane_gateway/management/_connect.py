"""``GET /api/connect`` (CONNECT-2): a client's set-up text and one-call ``try``, for any member.

The URL in the texts is the one clients reach SubLane at: ``SUBLANE_PUBLIC_URL``, else the scheme and
host the browser used (a trusted proxy's forwarded ones, OPS-6). The model is one the key's group
serves (``key_id``: one of the member's keys, any key for an admin; without it the member's first
group), so the ``try`` call works as pasted.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from sublane_core import ApiKey, GroupMember, ResourceGroup, SubLaneError, User
from sublane_gateway._proxy import external_host, external_scheme
from sublane_gateway._sessions import CurrentUser
from sublane_gateway._state import gateway_state
from sublane_gateway.connect import ConnectError, check_url, connect_text, templates
from sublane_gateway.pipeline import client_runtime, served_by_group

router = APIRouter(tags=["connect"])

_MAX_ID = 2**62


def client_url(request: Request) -> str:
    """The URL clients reach SubLane at (CONNECT-1, OPS-6)."""
    public_url = gateway_state(request).settings.public_url
    url = public_url or f"{external_scheme(request)}://{external_host(request)}"
    try:
        return check_url(url)
    except ConnectError:
        raise SubLaneError(
            "invalid_request", "SubLane's address is not a plain URL here: set SUBLANE_PUBLIC_URL."
        ) from None


def _group(engine: Engine, user: User, key_id: int | None) -> ResourceGroup | None:
    """The group whose models the texts use: the key's, else the member's first by name."""
    with Session(engine, expire_on_commit=False) as db:
        if key_id is not None:
            key = db.get(ApiKey, key_id)
            if key is None or (key.user_id != user.id and user.role != "admin"):
                raise SubLaneError("not_found", f"No key with id {key_id}.")
            return db.get(ResourceGroup, key.group_id)
        return db.exec(
            select(ResourceGroup)
            .join(GroupMember, col(GroupMember.group_id) == col(ResourceGroup.id))
            .where(col(GroupMember.user_id) == user.id)
            .order_by(col(ResourceGroup.name))
        ).first()


def _key_id(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= _MAX_ID:
        raise SubLaneError("invalid_request", "key_id: must be a key's id")
    return int(raw)


@router.get("/api/connect/clients")
async def connect_clients(_user: CurrentUser) -> dict[str, Any]:
    """The clients ``GET /api/connect`` knows, in the order the web shows them."""
    return {"items": [{"client": name, "title": item.title} for name, item in templates().items()]}


@router.get("/api/connect")
async def connect(request: Request, user: CurrentUser) -> dict[str, Any]:
    """``{"client","title","setup","try","url","model"}`` for ``?client=…`` (CONNECT-2)."""
    client = request.query_params.get("client", "")
    if client not in templates():
        raise SubLaneError("invalid_request", f"client: one of {', '.join(templates())}")
    url = client_url(request)
    group = await anyio.to_thread.run_sync(
        _group, gateway_state(request).engine, user, _key_id(request.query_params.get("key_id"))
    )
    served: list[str] = []
    if group is not None and group.id is not None:
        policy = group.model_policy.get("allow") if isinstance(group.model_policy, dict) else None
        allowed = tuple(policy) if isinstance(policy, list) else None
        served = list(await served_by_group(client_runtime(request), group.id, allowed))
    answer: dict[str, Any] = connect_text(client, url, served)
    chosen = templates()[client]
    answer["url"] = url
    answer["model"] = chosen.choose_model(served)
    return answer
