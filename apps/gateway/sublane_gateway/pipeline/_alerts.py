"""Alerts to webhooks (ALERT-2…4): events written to a durable outbox, delivered at least once.

:func:`enqueue` adds an event for every enabled webhook that wants it to the caller's database
transaction (so it is written with the state change that caused it, or right after for in-memory
state). :class:`Deliverer`, a task of the app's event loop, sends due deliveries: ``POST`` with
``X-SubLane-Event``, ``X-SubLane-Delivery`` (the event id, the same on every retry),
``X-SubLane-Timestamp`` and ``X-SubLane-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">``;
a timeout (10 s), a connection error or a non-2xx answer is retried after 10 s, doubling up to an
hour, for 24 hours, then marked failed. It never runs on a model request's path: a request only
ever adds rows. Pending deliveries survive restarts (they are rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
from typing import Any, Final

import anyio.to_thread
import httpx
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from sublane_core import Clock, CredentialCipher, Webhook, WebhookDelivery

_log = logging.getLogger("sublane.alerts")

EVENTS: Final = (
    "account.reauth_required",
    "account.refresh_failing",
    "account.cooling",
    "account.recovered",
    "account.quota_exhausted",
    "account.quota_recovered",
    "model.limited",
    "pool.unavailable",
    "history.dropped",
    "webhook.test",
)
TIMEOUT_S: Final = 10.0
FIRST_RETRY_S: Final = 10.0
MAX_RETRY_S: Final = 3600.0
GIVE_UP_S: Final = 24 * 3600.0
POLL_S: Final = 1.0
BATCH: Final = 20


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>`` of ``"<timestamp>.<body>"`` (ALERT-3)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def slack_text(event: str, data: dict[str, Any]) -> str:
    """The one line a ``slack`` webhook gets: the event and its named objects."""
    parts = [f"SubLane: {event}"]
    for key in ("account", "group", "model"):
        value = data.get(key)
        if isinstance(value, dict) and value.get("name"):
            parts.append(f"{key} {value['name']}")
        elif isinstance(value, str):
            parts.append(f"{key} {value}")
    return " · ".join(parts)


def enqueue(
    db: Session, workspace: str, event: str, data: dict[str, Any], now: float, *, only: int | None = None
) -> str:
    """Add ``event`` for every enabled webhook that wants it (``only``: that webhook alone) to
    ``db``'s transaction (the caller commits); the event id."""
    event_id = "evt_" + secrets.token_hex(12)
    document = {"id": event_id, "event": event, "at": now, "workspace": workspace, "data": data}
    payload = json.dumps(document, separators=(",", ":"))
    query = select(Webhook).where(col(Webhook.enabled).is_(True))
    if only is not None:
        query = query.where(col(Webhook.id) == only)
    for hook in db.exec(query).all():
        if hook.id is None or not (only is not None or "*" in hook.events or event in hook.events):
            continue
        db.add(
            WebhookDelivery(
                webhook_id=hook.id, event_id=event_id, event=event, payload=payload,
                next_attempt_at=now, created_at=now,
            )
        )  # fmt: skip
    return event_id


class Deliverer:
    """Sends due deliveries, one batch at a time, on the app's event loop."""

    def __init__(
        self, engine: Engine, cipher: CredentialCipher, clock: Clock, first_retry_s: float = FIRST_RETRY_S
    ) -> None:
        self._first_retry_s = first_retry_s
        self._engine = engine
        self._cipher = cipher
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def poke(self) -> None:
        """Something was queued: look now rather than at the next poll."""
        self._wake.set()

    async def raise_event(self, workspace: str, event: str, data: dict[str, Any]) -> None:
        """Queue an event about in-memory state right after it changed (ALERT-4): the outbox row is
        written by a worker thread, off the event loop, then delivered at once."""
        now = self._clock.time()

        def write() -> None:
            with Session(self._engine) as db:
                enqueue(db, workspace, event, data, now)
                db.commit()

        await anyio.to_thread.run_sync(write)
        self.poke()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False) as http:
            while True:
                try:
                    sent = await self.deliver_due(http)
                except Exception:  # a broken database must not end deliveries for good
                    _log.exception("alert delivery failed")
                    sent = 0
                if sent < BATCH:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), POLL_S)

    async def deliver_due(self, http: httpx.AsyncClient) -> int:
        """Send the due deliveries (at most a batch); how many were tried."""
        due = await anyio.to_thread.run_sync(self._due)
        for delivery_id, url, fmt, secret, event, event_id, payload in due:
            status, error = await self._send(http, url, fmt, secret, event, event_id, payload)
            await anyio.to_thread.run_sync(self._settle, delivery_id, status, error)
        return len(due)

    def _due(self) -> list[tuple[int, str, str, str, str, str, str]]:
        now = self._clock.time()
        with Session(self._engine) as db:
            rows = db.exec(
                select(WebhookDelivery, Webhook)
                .join(Webhook, col(Webhook.id) == col(WebhookDelivery.webhook_id))
                .where(col(WebhookDelivery.status) == "pending", col(WebhookDelivery.next_attempt_at) <= now)
                .order_by(col(WebhookDelivery.id))
                .limit(BATCH)
            ).all()
            due = []
            for delivery, hook in rows:
                if delivery.id is None:
                    continue
                secret = str(self._cipher.decrypt(hook.secret)["secret"])
                due.append(
                    (
                        delivery.id,
                        hook.url,
                        hook.format,
                        secret,
                        delivery.event,
                        delivery.event_id,
                        delivery.payload,
                    )
                )
            return due

    async def _send(
        self,
        http: httpx.AsyncClient,
        url: str,
        fmt: str,
        secret: str,
        event: str,
        event_id: str,
        payload: str,
    ) -> tuple[int | None, str | None]:
        body = payload.encode()
        if fmt == "slack":
            document = json.loads(payload)
            body = json.dumps({"text": slack_text(event, document.get("data") or {})}).encode()
        timestamp = int(self._clock.time())
        headers = {
            "content-type": "application/json",
            "user-agent": "SubLane-Webhooks/1",
            "x-sublane-event": event,
            "x-sublane-delivery": event_id,
            "x-sublane-timestamp": str(timestamp),
            "x-sublane-signature": sign(secret, timestamp, body),
        }
        try:
            answer = await http.post(url, content=body, headers=headers)
        except httpx.TimeoutException:
            return None, "timeout"
        except httpx.HTTPError as exc:
            return None, type(exc).__name__[:64]
        return answer.status_code, None if 200 <= answer.status_code < 300 else f"http_{answer.status_code}"

    def _settle(self, delivery_id: int, status: int | None, error: str | None) -> None:
        now = self._clock.time()
        with Session(self._engine) as db:
            delivery = db.get(WebhookDelivery, delivery_id)
            if delivery is None:
                return
            delivery.attempts += 1
            delivery.last_status, delivery.last_error = status, error
            if error is None:
                delivery.status = "delivered"
            elif now - delivery.created_at >= GIVE_UP_S:
                delivery.status = "failed"
            else:
                delay = min(MAX_RETRY_S, self._first_retry_s * 2 ** (delivery.attempts - 1))
                delivery.next_attempt_at = now + delay
            db.add(delivery)
            db.commit()
