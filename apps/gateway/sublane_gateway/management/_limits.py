"""Member limits (TEAM-1): read your own, read and set anyone's; admission applies them at once."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sublane_core import ROLE_ADMIN, User, signals
from sublane_gateway._sessions import AdminUser, CurrentUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._metered import caps_changed, member_spend_view
from sublane_gateway.management._models import LimitsUpdate, PathId
from sublane_gateway.pipeline import client_runtime

router = APIRouter(tags=["team"])


def limits_view(request: Request, user: User) -> dict[str, Any]:
    """``{"user_id", "rpm", "member_concurrency", "enforced", "in_use"}`` and PAID-3's
    ``metered_monthly_usd``, ``metered_spent_usd``, ``metered_uncosted_calls``, ``metered_reset_at``;
    admins are bound only by workspace and account limits, so theirs are stored but not ``enforced``."""
    assert user.id is not None
    admission = client_runtime(request).scheduler.admission
    return {
        "user_id": user.id,
        "rpm": user.rpm,
        "member_concurrency": user.member_concurrency,
        "enforced": user.role != ROLE_ADMIN,
        "in_use": admission.member_in_use(user.id),
    } | member_spend_view(request, user)


@router.get("/api/me/limits")
def my_limits(request: Request, user: CurrentUser) -> dict[str, Any]:
    """*Personal*: your requests per minute (fixed UTC minutes) and concurrent requests; 0 = unlimited."""
    return limits_view(request, user)


@router.get("/api/users/{user_id}/limits")
def user_limits(user_id: PathId, request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """A member's limits."""
    return limits_view(request, get_or_404(db, User, user_id, "user"))


@router.patch("/api/users/{user_id}/limits")
def set_user_limits(
    user_id: PathId, body: LimitsUpdate, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Set `rpm` (0–6000) and/or `member_concurrency` (0–1000); 0 = unlimited; `metered_monthly_usd`
    (PAID-3: dollars of metered use per UTC month, `null` = none). Applies to the next request:
    running and waiting ones finish (ADM-7)."""
    user: User = get_or_404(db, User, user_id, "user")
    if body.rpm is not None:
        user.rpm = body.rpm
    if body.member_concurrency is not None:
        user.member_concurrency = body.member_concurrency
    metered = "metered_monthly_usd" in body.model_fields_set  # PAID-3: null removes the limit
    if metered:
        user.metered_monthly_usd = body.metered_monthly_usd
    user.updated_at = gateway_state(request).clock.time()
    db.add(user)
    audit(
        db,
        request,
        admin,
        "user.limits",
        user_id,
        rpm=user.rpm,
        member_concurrency=user.member_concurrency,
        metered_monthly_usd=user.metered_monthly_usd,
    )
    db.commit()
    if metered:
        caps_changed(request)
    # The key cache holds each caller's limits: forget it, so the next request is admitted anew.
    signals.access_changed.send(signals.AccessChanged(kind=signals.AccessKind.USER, id=user_id))
    return limits_view(request, user)
