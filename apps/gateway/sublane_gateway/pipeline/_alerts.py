"""Alerts to webhooks (ALERT-3, ALERT-4): the durable outbox delivered at least once.

Events are written by whoever changes the state (:class:`sublane_core.AlertOutbox`, in their own
transaction, or right after for in-memory state). :class:`Deliverer`, a task of the app's event
loop, sends due deliveries side by side: ``POST`` with ``X-SubLane-Event``, ``X-SubLane-Delivery``
(the event id, the same on every retry), ``X-SubLane-Timestamp`` and
``X-SubLane-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">``; a timeout (10 s), a
connection error or a non-2xx answer is retried after 10 s, doubling up to an hour, for 24 hours,
then marked failed. It never runs on a model request's path: a request only ever adds rows.
Pending deliveries survive restarts (they are rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any, Final

import anyio.to_thread
import httpx
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from sublane_core import AlertOutbox, Clock, CredentialCipher, Webhook, WebhookDelivery
from sublane_gateway.pipeline._background import BackgroundTasks

_log = logging.getLogger("sublane.alerts")

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


def _forget(in_flight: set[int], key: int, _task: asyncio.Task[None]) -> None:
    in_flight.discard(key)


class Deliverer:
    """Sends due deliveries, one batch at a time, on the app's event loop."""

    def __init__(
        self,
        engine: Engine,
        cipher: CredentialCipher,
        clock: Clock,
        outbox: AlertOutbox,
        first_retry_s: float = FIRST_RETRY_S,
    ) -> None:
        self._first_retry_s = first_retry_s
        self.outbox = outbox
        self._engine = engine
        self._cipher = cipher
        self._clock = clock
        self._work = BackgroundTasks()  # the polling loop and each delivery
        self._wake = asyncio.Event()

    def start(self) -> None:
        self._work.start(self._run, name="sublane-alerts")

    def poke(self) -> None:
        """Something was queued: look now rather than at the next poll."""
        self._wake.set()

    async def raise_event(self, event: str, describe: Callable[[Connection], dict[str, Any]]) -> str | None:
        """Queue an event about in-memory state right after it changed (ALERT-4): the outbox row,
        with the data ``describe`` reads, is written by a worker thread, off the event loop, then
        delivered at once. A failing database is logged, never raised (the change stands). The
        event id, or ``None`` when nothing was written."""

        try:
            return await anyio.to_thread.run_sync(self.outbox.raise_event, self._engine, event, describe)
        except SQLAlchemyError as exc:
            _log.error("could not queue the %s alert: %s", event, type(exc).__name__)
            return None

    async def close(self) -> None:
        """Stop polling and sending; a delivery's row being written is written first."""
        await self._work.close()

    async def _run(self) -> None:
        """Start each due delivery as a task of its own (at most ``BATCH`` in flight), so a receiver
        that stays silent until the timeout holds up nobody else."""
        in_flight: set[int] = set()
        async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False) as http:
            while True:
                self._wake.clear()
                room = BATCH - len(in_flight)
                if room > 0:
                    try:
                        due = await anyio.to_thread.run_sync(self._due, frozenset(in_flight), room)
                    except Exception:  # a broken database must not end deliveries for good
                        _log.exception("alert delivery failed")
                        due = []
                    for row in due:
                        in_flight.add(row[0])
                        task = self._work.start(self._deliver, http, *row)
                        task.add_done_callback(functools.partial(_forget, in_flight, row[0]))
                # asyncio.timeout, not wait_for: on Python 3.11 a wait_for cancelled in the
                # same turn as the event it waits on is set can wait forever (close() hung).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(POLL_S):
                        await self._wake.wait()

    async def _deliver(self, http: httpx.AsyncClient, delivery_id: int, *sending: str) -> None:
        try:
            status, error = await self._send(http, *sending)
            await anyio.to_thread.run_sync(self._settle, delivery_id, status, error)
        except Exception:
            _log.exception("alert delivery failed")
        finally:
            self._wake.set()  # room for another

    def _due(self, busy: frozenset[int], room: int) -> list[tuple[int, str, str, str, str, str, str]]:
        """Up to ``room`` due deliveries, none of those in flight (``busy``)."""
        now = self._clock.time()
        with Session(self._engine) as db:
            rows = db.exec(
                select(WebhookDelivery, Webhook)
                .join(Webhook, col(Webhook.id) == col(WebhookDelivery.webhook_id))
                .where(
                    col(WebhookDelivery.status) == "pending",
                    col(WebhookDelivery.next_attempt_at) <= now,
                    col(WebhookDelivery.id).not_in(busy),
                )
                .order_by(col(WebhookDelivery.id))
                .limit(room)
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
