"""Spend caps on metered use (PAID-3): what the group and member views show of them.

The caps are stored on the group (``metered_monthly_usd``) and the user (a member limit, TEAM-1);
the month's spend is the app's :class:`sublane_pricing.SpendLedger`, read again from the database
before a view is answered, so a view shows every replica's spend as stored.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session
from starlette.requests import Request

from sublane_core import ROLE_ADMIN, ResourceGroup, User
from sublane_gateway._state import gateway_state
from sublane_pricing import SpendLedger


def spend_ledger(request: Request) -> SpendLedger:
    """The app's metered spend ledger (made when it starts serving)."""
    ledger: SpendLedger = request.app.state["metered_spend"]
    return ledger


def caps_changed(request: Request) -> None:
    """A cap was set: selection on this replica uses it at once (others within ``REFRESH_S``)."""
    spend_ledger(request).refresh()


def group_spend_views(request: Request, groups: list[ResourceGroup]) -> dict[int, dict[str, Any]]:
    """Per group: ``metered_monthly_usd`` (its cap, ``null``: none), ``metered_spent_usd`` (this UTC
    month), ``metered_uncosted_calls`` (metered calls whose cost is unknown) and
    ``metered_reset_at`` (Unix seconds: the next UTC month)."""
    ledger = spend_ledger(request)
    ledger.refresh()
    reset = ledger.reset_at()
    return {
        group.id: {
            "metered_monthly_usd": group.metered_monthly_usd,
            "metered_spent_usd": ledger.group_spent(group.id),
            "metered_uncosted_calls": ledger.uncosted(group_id=group.id),
            "metered_reset_at": reset,
        }
        for group in groups
        if group.id is not None
    }


def member_spend_view(request: Request, user: User, *, fresh: bool = True) -> dict[str, Any]:
    """The member's limit (``metered_monthly_usd``; an admin's is stored, not enforced: TEAM-1),
    ``metered_spent_usd`` this UTC month across their groups, ``metered_uncosted_calls`` and
    ``metered_reset_at``."""
    assert user.id is not None
    ledger = spend_ledger(request)
    if fresh:
        ledger.refresh()
    return {
        "metered_monthly_usd": user.metered_monthly_usd,
        "metered_spent_usd": ledger.member_spent(user.id),
        "metered_uncosted_calls": ledger.uncosted(user_id=user.id),
        "metered_reset_at": ledger.reset_at(),
    }


def key_metered_view(request: Request, user_id: int, group_id: int) -> dict[str, Any]:
    """``GET /v1/usage``'s ``metered`` (blocking: a worker thread): ``{"member": {"limit_usd",
    "spent_usd"}, "group": {"limit_usd", "spent_usd"}, "reset_at"}`` for this UTC month; a
    member's limit is ``null`` for an admin (not enforced, TEAM-1)."""
    ledger = spend_ledger(request)
    ledger.refresh()
    with Session(gateway_state(request).engine) as db:
        user, group = db.get(User, user_id), db.get(ResourceGroup, group_id)
        member_cap = user.metered_monthly_usd if user is not None and user.role != ROLE_ADMIN else None
        group_cap = group.metered_monthly_usd if group is not None else None
    return {
        "member": {"limit_usd": member_cap, "spent_usd": ledger.member_spent(user_id)},
        "group": {"limit_usd": group_cap, "spent_usd": ledger.group_spent(group_id)},
        "reset_at": ledger.reset_at(),
    }
