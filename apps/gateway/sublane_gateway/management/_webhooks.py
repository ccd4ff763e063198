"""Webhooks (ALERT-1, ALERT-4): admins register where alerts go, see their deliveries, send a test.

The signing secret is made here, shown once (in the creation answer) and stored sealed with the
credential key; no answer, log or audit entry carries it afterwards. A URL is accepted only when
the deliverer can use it as given (:func:`url_problem`, else 400 ``invalid_url``), and its
user-info and path are secrets too: answers and audit entries hold it masked (:func:`masked_url`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import col, func, select

from sublane_core import ALERT_EVENTS, SubLaneError, Webhook, WebhookDelivery
from sublane_gateway._digits import ascii_int
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway._state import gateway_state
from sublane_gateway.management._audit import audit
from sublane_gateway.management._ids import get_or_404
from sublane_gateway.management._models import PathId, WebhookCreate, WebhookUpdate
from sublane_gateway.pipeline import client_runtime
from sublane_gateway.pipeline._alerts import new_secret
from sublane_gateway.pipeline._webhook_url import masked_url, url_problem

router = APIRouter(tags=["alerts"])
MAX_WEBHOOKS = 16
PAGE = 50


def _view(hook: Webhook) -> dict[str, Any]:
    return {
        "id": hook.id,
        "url": masked_url(hook.url),  # ALERT-1: user-info and path are secrets
        "events": hook.events,
        "format": hook.format,
        "enabled": hook.enabled,
        "created_at": hook.created_at,
        "updated_at": hook.updated_at,
    }


def _checked_url(url: str) -> str:
    problem = url_problem(url)
    if problem is not None:
        raise SubLaneError("invalid_url", f"The webhook cannot be sent to that URL: {problem}.")
    return url


def _checked_events(events: list[str]) -> list[str]:
    if events == ["*"]:
        return events
    unknown = sorted(set(events) - set(ALERT_EVENTS))
    if unknown or not events:
        raise SubLaneError("invalid_request", f"Unknown events: {', '.join(unknown) or 'none given'}.")
    return sorted(set(events))


@router.get("/api/webhooks")
def list_webhooks(_admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Every webhook (never its secret), and the events one may ask for."""
    hooks = db.exec(select(Webhook).order_by(col(Webhook.id))).all()
    return {"items": [_view(hook) for hook in hooks], "events_available": list(ALERT_EVENTS)}


@router.post("/api/webhooks", status_code=201)
def add_webhook(body: WebhookCreate, request: Request, admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Register a webhook; the answer's ``secret`` signs its deliveries and is shown only now."""
    if db.exec(select(func.count()).select_from(Webhook)).one() >= MAX_WEBHOOKS:
        raise SubLaneError("webhook_limit_reached")
    state = gateway_state(request)
    now = state.clock.time()
    secret = new_secret()
    hook = Webhook(
        url=_checked_url(body.url),
        events=_checked_events(body.events),
        format=body.format,
        enabled=body.enabled,
        secret=state.cipher.encrypt({"secret": secret}),
        created_at=now,
        updated_at=now,
    )
    db.add(hook)
    db.flush()
    audit(
        db,
        request,
        admin,
        "webhook.create",
        hook.id,
        url=masked_url(hook.url),
        events=hook.events,
        format=hook.format,
    )
    db.commit()
    client_runtime(request).outbox.webhooks_changed()
    return {**_view(hook), "secret": secret}


@router.patch("/api/webhooks/{webhook_id}")
def update_webhook(
    webhook_id: PathId, body: WebhookUpdate, request: Request, admin: AdminUser, db: DbSession
) -> dict[str, Any]:
    """Change a webhook's URL, events, format or enabled flag."""
    hook: Webhook = get_or_404(db, Webhook, webhook_id, "webhook")
    fields = body.model_fields_set
    if "url" in fields and body.url is not None and body.url != masked_url(hook.url):
        hook.url = _checked_url(body.url)  # (the URL as answers show it, sent back, changes nothing)
    if "events" in fields and body.events is not None:
        hook.events = _checked_events(body.events)
    if "format" in fields and body.format is not None:
        hook.format = body.format
    if "enabled" in fields and body.enabled is not None:
        hook.enabled = body.enabled
    hook.updated_at = gateway_state(request).clock.time()
    db.add(hook)
    audit(
        db,
        request,
        admin,
        "webhook.update",
        webhook_id,
        url=masked_url(hook.url),
        events=hook.events,
        enabled=hook.enabled,
    )
    db.commit()
    client_runtime(request).outbox.webhooks_changed()
    return _view(hook)


@router.delete("/api/webhooks/{webhook_id}", status_code=204)
def delete_webhook(webhook_id: PathId, request: Request, admin: AdminUser, db: DbSession) -> None:
    """Remove a webhook and its deliveries."""
    hook: Webhook = get_or_404(db, Webhook, webhook_id, "webhook")
    db.delete(hook)
    audit(db, request, admin, "webhook.delete", webhook_id)
    db.commit()
    client_runtime(request).outbox.webhooks_changed()


@router.get("/api/webhooks/{webhook_id}/deliveries")
def deliveries(webhook_id: PathId, request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """The webhook's deliveries, newest first, 50 a page; ``cursor`` is the previous ``next_cursor``."""
    get_or_404(db, Webhook, webhook_id, "webhook")
    query = select(WebhookDelivery).where(col(WebhookDelivery.webhook_id) == webhook_id)
    cursor = request.query_params.get("cursor")
    if cursor:
        query = query.where(col(WebhookDelivery.id) < ascii_int(cursor, "cursor"))  # OPS-1
    rows = db.exec(query.order_by(col(WebhookDelivery.id).desc()).limit(PAGE + 1)).all()
    items = [
        {
            "id": row.event_id,
            "event": row.event,
            "status": row.status,
            "attempts": row.attempts,
            "last_status": row.last_status,
            "last_error": row.last_error,
            "next_attempt_at": row.next_attempt_at if row.status == "pending" else None,
        }
        for row in rows[:PAGE]
    ]
    more = len(rows) > PAGE and rows[PAGE - 1].id is not None
    return {"items": items, "next_cursor": str(rows[PAGE - 1].id) if more else None}


@router.post("/api/webhooks/{webhook_id}/test", status_code=202)
def test_webhook(webhook_id: PathId, request: Request, admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Queue a ``webhook.test`` event for this webhook → ``{"event_id"}``."""
    hook: Webhook = get_or_404(db, Webhook, webhook_id, "webhook")
    if not hook.enabled:
        raise SubLaneError("invalid_request", "The webhook is disabled.")
    outbox = client_runtime(request).outbox
    event_id = outbox.add(db.connection(), "webhook.test", {"webhook": {"id": webhook_id}}, only=webhook_id)
    audit(db, request, admin, "webhook.test", webhook_id)
    db.commit()
    outbox.added()
    return {"event_id": event_id}
