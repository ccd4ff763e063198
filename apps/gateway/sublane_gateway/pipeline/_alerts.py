"""Alerts to webhooks (ALERT-3, ALERT-4, ALERT-6): the durable outbox delivered at least once.

Events are written by whoever changes the state (:class:`sublane_core.AlertOutbox`, in their own
transaction, or right after for in-memory state). :class:`Deliverer`, a task of the app's event
loop, sends due deliveries side by side: ``POST`` with ``X-SubLane-Event``, ``X-SubLane-Delivery``
(the event id, the same on every retry), ``X-SubLane-Timestamp`` and
``X-SubLane-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">``; a timeout (10 s), a
connection error, a non-2xx answer — or any other failure to send, whatever raised it — is a failed
attempt, retried after 10 s, doubling up to an hour, for 24 hours, then marked failed. It never
runs on a model request's path: a request only ever adds rows. Pending deliveries survive restarts
(they are rows).

**Claims (ALERT-6).** Every replica (and every worker) runs a deliverer over the same table, so a
delivery is *claimed* in the database before it is sent: one statement moves the due rows'
``next_attempt_at`` to the end of a lease (:data:`LEASE_S`) and returns them — on PostgreSQL the
rows are picked ``FOR UPDATE SKIP LOCKED``, so two replicas claiming at once take different rows;
SQLite has one writer, so the statement is atomic there. Only the claimer sends; its result is
written only while its lease is still the row's (``next_attempt_at`` = the lease), so a claimer
that died gives its rows back when the lease runs out, and a late one cannot overwrite the next.
A deliverer that stops gives back what it had not sent.

**Disabled webhooks.** A disabled webhook's pending deliveries are not claimed: they wait, and go
out when it is enabled again — unless their 24 hours are up by then: a pending delivery is marked
``failed`` (``last_error`` kept, else ``expired``) once 24 hours have passed since its event,
without another attempt.
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
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col

from sublane_core import AlertOutbox, Clock, CredentialCipher, Webhook, WebhookDelivery
from sublane_gateway.pipeline._background import BackgroundTasks
from sublane_gateway.pipeline._webhook_url import refused_resolution, url_problem

if TYPE_CHECKING:
    import httpx  # at run time: imported by the calls that use it (issue #49)

_log = logging.getLogger("sublane.alerts")

TIMEOUT_S: Final = 10.0
FIRST_RETRY_S: Final = 10.0
MAX_RETRY_S: Final = 3600.0
GIVE_UP_S: Final = 24 * 3600.0
POLL_S: Final = 1.0
BATCH: Final = 20
#: How long a claimed delivery is its claimer's (ALERT-6): well past a send's 10 s, so only a
#: claimer that died (or lost its database) gives a delivery back this way.
LEASE_S: Final = 60.0

#: Set in a delivery's task: httpx's own INFO line (``HTTP Request: POST <url> …``) would write the
#: webhook's URL — its user-info and path are secrets (ALERT-1) — so it is dropped there.
_delivering: ContextVar[bool] = ContextVar("sublane_webhook_delivering", default=False)


class _NoWebhookUrls(logging.Filter):
    """On httpx's logger: drops the lines it writes while a webhook delivery sends."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _delivering.get()


_NO_WEBHOOK_URLS: Final = _NoWebhookUrls()


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


@dataclass(frozen=True, slots=True)
class _Claimed:
    """A delivery this deliverer claimed until ``lease``, with what sending it takes."""

    id: int
    lease: float
    webhook_id: int
    url: str
    format: str
    secret: str | None  # None: the sealed secret could not be opened (a failed attempt)
    event: str
    event_id: str
    payload: str


class Deliverer:
    """Claims due deliveries in the database and sends them, side by side, on the app's event loop."""

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
        self._in_flight: dict[int, _Claimed] = {}  # claimed here and not settled yet

    def start(self) -> None:
        logging.getLogger("httpx").addFilter(_NO_WEBHOOK_URLS)  # the same filter is added once
        self._work.start(self._run, name="sublane-alerts")

    def poke(self) -> None:
        """Something was queued: look now rather than at the next poll."""
        self._wake.set()

    async def raise_event(
        self,
        event: str,
        describe: Callable[[Connection], dict[str, Any]],
        *,
        once_per: tuple[str, float] | None = None,
    ) -> str | None:
        """Queue an event about in-memory state right after it changed (ALERT-4): the outbox row,
        with the data ``describe`` reads, is written by a worker thread, off the event loop, then
        delivered at once. ``once_per`` (key, seconds): at most one such event per key in that time
        over every replica (ALERT-6). A failing database is logged, never raised (the change
        stands). The event id, or ``None`` when nothing was written."""

        try:
            return await anyio.to_thread.run_sync(
                functools.partial(self.outbox.raise_event, once_per=once_per),
                self._engine,
                event,
                describe,
            )
        except SQLAlchemyError as exc:
            _log.error("could not queue the %s alert: %s", event, type(exc).__name__)
            return None

    async def close(self) -> None:
        """Stop polling and sending; a delivery's row being written is written first, and what was
        claimed here but not sent is given back (the next start, or another replica, sends it)."""
        await self._work.close()
        unsent = list(self._in_flight.values())
        self._in_flight.clear()
        if unsent:
            try:
                await anyio.to_thread.run_sync(self._give_back, unsent)
            except SQLAlchemyError as exc:  # the leases run out instead
                _log.warning("could not give back %d alert deliveries: %s", len(unsent), type(exc).__name__)

    async def _run(self) -> None:
        """Start each claimed delivery as a task of its own (at most ``BATCH`` in flight), so a
        receiver that stays silent until the timeout holds up nobody else."""
        in_flight = self._in_flight
        # Built with the first delivery, not at start: httpx (4.5 MB with the click, rich and
        # pygments it imports when installed), its TLS context and CA bundle (~2 MB) are resident
        # memory that a gateway with no webhook never uses (issue #49).
        http: httpx.AsyncClient | None = None
        try:
            while True:
                self._wake.clear()
                room = BATCH - len(in_flight)
                if room > 0:
                    try:
                        claimed = await anyio.to_thread.run_sync(self._claim, frozenset(in_flight), room)
                    except Exception as exc:  # a broken database must not end deliveries for good
                        _log.error("could not read the alert outbox: %s", type(exc).__name__)
                        claimed = []
                    for delivery in claimed:
                        if http is None:
                            import httpx

                            http = httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False)
                        in_flight[delivery.id] = delivery  # until settled (or given back at close)
                        self._work.start(self._deliver, http, delivery)
                # asyncio.timeout, not wait_for: on Python 3.11 a wait_for cancelled in the
                # same turn as the event it waits on is set can wait forever (close() hung).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(POLL_S):
                        await self._wake.wait()
        finally:
            if http is not None:
                await http.aclose()

    async def _deliver(self, http: httpx.AsyncClient, delivery: _Claimed) -> None:
        _delivering.set(True)  # this task's own context: httpx logs nothing of this URL
        try:
            try:
                status, error = await self._send(http, delivery)
            except Exception as exc:  # whatever failed, it is a failed attempt, never a hot loop
                status, error = None, type(exc).__name__[:64]
            try:
                await anyio.to_thread.run_sync(self._settle, delivery, status, error)
            except Exception as exc:  # the claim runs out and the delivery is tried again then
                _log.error(
                    "could not record a delivery to webhook %s: %s", delivery.webhook_id, type(exc).__name__
                )
            self._in_flight.pop(delivery.id, None)
        finally:
            self._wake.set()  # room for another

    def _claim(self, busy: frozenset[int], room: int) -> list[_Claimed]:
        """Claim up to ``room`` due deliveries of enabled webhooks, none of those in flight here
        (``busy``), until ``now + LEASE_S``; give up on those whose 24 hours are up."""
        now = self._clock.time()
        lease = now + LEASE_S
        with self._engine.begin() as connection:
            # a read first: a poll that finds nothing due writes nothing (SQLite has one writer)
            anything_due = sa.select(col(WebhookDelivery.id)).where(
                col(WebhookDelivery.status) == "pending",
                col(WebhookDelivery.next_attempt_at) <= now,
                col(WebhookDelivery.id).not_in(busy),
            )
            if connection.execute(anything_due.limit(1)).first() is None:
                return []
            connection.execute(
                sa.update(WebhookDelivery)
                .where(
                    col(WebhookDelivery.status) == "pending",
                    col(WebhookDelivery.created_at) <= now - GIVE_UP_S,
                    col(WebhookDelivery.next_attempt_at) <= now,
                )
                .values(
                    status="failed", last_error=sa.func.coalesce(col(WebhookDelivery.last_error), "expired")
                )
            )
            enabled = sa.select(col(Webhook.id)).where(col(Webhook.enabled).is_(True))
            due = (
                sa.select(col(WebhookDelivery.id))
                .where(
                    col(WebhookDelivery.status) == "pending",
                    col(WebhookDelivery.next_attempt_at) <= now,
                    col(WebhookDelivery.webhook_id).in_(enabled),
                    col(WebhookDelivery.id).not_in(busy),
                )
                .order_by(col(WebhookDelivery.next_attempt_at), col(WebhookDelivery.id))
                .limit(room)
                .with_for_update(skip_locked=True)  # PostgreSQL; SQLite's one writer needs none
            )
            rows = connection.execute(
                sa.update(WebhookDelivery)
                .where(col(WebhookDelivery.id).in_(due.scalar_subquery()))
                .values(next_attempt_at=lease)
                .returning(
                    col(WebhookDelivery.id),
                    col(WebhookDelivery.webhook_id),
                    col(WebhookDelivery.event),
                    col(WebhookDelivery.event_id),
                    col(WebhookDelivery.payload),
                )
            ).all()
            if not rows:
                return []
            hooks = {
                hook_id: (url, fmt, sealed)
                for hook_id, url, fmt, sealed in connection.execute(
                    sa.select(
                        col(Webhook.id), col(Webhook.url), col(Webhook.format), col(Webhook.secret)
                    ).where(col(Webhook.id).in_({row.webhook_id for row in rows}))
                )
            }
        claimed = []
        for row in sorted(rows, key=lambda row: int(row.id)):
            url, fmt, sealed = hooks[row.webhook_id]
            claimed.append(
                _Claimed(
                    row.id,
                    lease,
                    row.webhook_id,
                    url,
                    fmt,
                    self._secret(sealed),
                    row.event,
                    row.event_id,
                    row.payload,
                )
            )
        return claimed

    def _secret(self, sealed: bytes) -> str | None:
        try:
            return str(self._cipher.decrypt(sealed)["secret"])
        except Exception:  # a key that cannot open it: each delivery is a failed attempt, told once each
            return None

    async def _send(self, http: httpx.AsyncClient, delivery: _Claimed) -> tuple[int | None, str | None]:
        import httpx  # here, not at import: a default start sends no webhook (issue #49)

        if url_problem(delivery.url) is not None:  # stored before URLs were checked (ALERT-1)
            return None, "invalid_url"
        if await refused_resolution(delivery.url):
            return None, "refused_address"
        if delivery.secret is None:
            return None, "secret_unreadable"
        body = delivery.payload.encode()
        if delivery.format == "slack":
            document = json.loads(delivery.payload)
            body = json.dumps({"text": slack_text(delivery.event, document.get("data") or {})}).encode()
        timestamp = int(self._clock.time())
        headers = {
            "content-type": "application/json",
            "user-agent": "SubLane-Webhooks/1",
            "x-sublane-event": delivery.event,
            "x-sublane-delivery": delivery.event_id,
            "x-sublane-timestamp": str(timestamp),
            "x-sublane-signature": sign(delivery.secret, timestamp, body),
        }
        try:
            async with asyncio.timeout(TIMEOUT_S):  # all of it, however slowly the answer trickles
                answer = await http.post(delivery.url, content=body, headers=headers)
        except (TimeoutError, httpx.TimeoutException):
            return None, "timeout"
        except httpx.HTTPError as exc:
            return None, type(exc).__name__[:64]
        return answer.status_code, None if 200 <= answer.status_code < 300 else f"http_{answer.status_code}"

    def _settle(self, claimed: _Claimed, status: int | None, error: str | None) -> None:
        """Write an attempt's result, only while the claim is still this deliverer's."""
        now = self._clock.time()
        mine = (
            col(WebhookDelivery.id) == claimed.id,
            col(WebhookDelivery.status) == "pending",
            col(WebhookDelivery.next_attempt_at) == claimed.lease,
        )
        with self._engine.begin() as connection:
            row = connection.execute(
                sa.select(col(WebhookDelivery.attempts), col(WebhookDelivery.created_at)).where(*mine)
            ).first()
            if row is None:  # deleted, or the lease ran out and another claimer has it
                return
            attempts = int(row.attempts) + 1
            values: dict[str, Any] = {"attempts": attempts, "last_status": status, "last_error": error}
            if error is None:
                values["status"] = "delivered"
            elif now - float(row.created_at) >= GIVE_UP_S:
                values["status"] = "failed"
            else:
                values["next_attempt_at"] = now + min(MAX_RETRY_S, self._first_retry_s * 2 ** (attempts - 1))
            connection.execute(sa.update(WebhookDelivery).where(*mine).values(**values))

    def _give_back(self, unsent: list[_Claimed]) -> None:
        """Make claimed deliveries due again (those this deliverer stopped before sending)."""
        now = self._clock.time()
        with self._engine.begin() as connection:
            for claimed in unsent:
                connection.execute(
                    sa.update(WebhookDelivery)
                    .where(
                        col(WebhookDelivery.id) == claimed.id,
                        col(WebhookDelivery.status) == "pending",
                        col(WebhookDelivery.next_attempt_at) == claimed.lease,
                    )
                    .values(next_attempt_at=now)
                )
