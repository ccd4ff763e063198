"""The alert outbox (ALERT-2, ALERT-4): events added to the caller's own database transaction.

An event is one ``webhook_deliveries`` row per enabled webhook that wants it, written by whoever
changes the state the event is about, **in the same transaction** (a re-authorization mark, a
cooldown row, a quota observation), so the event exists exactly when the change does and survives
a restart. Events about in-memory state are written right after the change, in a transaction of
their own. Delivering them is the gateway's business; this module only writes rows.

Payloads name accounts and groups by id and name; they never carry a credential, token, prompt or
member e-mail (an account's name is what it was given, which is often its subscription's e-mail:
signing in through the provider names a new account after it).

An event told at most once per period (``pool.unavailable`` per group and model) is decided in the
database (``alert_marks``, ALERT-6), so the bound holds over every replica.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection, Engine
from sqlmodel import col

from sublane_core._clock import Clock
from sublane_core._schema import Account, AlertMark, ResourceGroup, Webhook, WebhookDelivery

#: Every event the outbox may carry (ALERT-2).
ALERT_EVENTS: Final = (
    "account.reauth_required",
    "account.refresh_failing",
    "account.cooling",
    "account.recovered",
    "account.quota_exhausted",
    "account.quota_recovered",
    "model.limited",
    "pool.unavailable",
    "history.dropped",
    "upstream.changed",
    "webhook.test",
)


#: How long :meth:`AlertOutbox.wants` trusts what it read.
WANTED_TTL_S: Final = 1.0


class AlertOutbox:
    """Writes alert events into a transaction the caller owns (and commits).

    ``on_added`` is called (from any thread) after a caller committed events, so the deliverer
    looks at once instead of at its next poll; set by whoever delivers.
    """

    def __init__(self, workspace: str, clock: Clock) -> None:
        self.workspace = workspace
        self._clock = clock
        self.on_added: Callable[[], None] | None = None
        self._wanted: tuple[float, frozenset[str]] | None = None  # (read at, events some hook wants)

    def wants(self, connection: Connection, *events: str) -> bool:
        """Whether an enabled webhook wants one of ``events``: lets a writer skip the reads an
        alert would need. Remembered for a second (webhook changes reach every replica in that
        time; this process forgets at once, :meth:`webhooks_changed`)."""
        now = self._clock.monotonic()
        known = self._wanted
        if known is None or now - known[0] >= WANTED_TTL_S:
            query = sa.select(col(Webhook.events)).where(col(Webhook.enabled).is_(True))
            wanted = frozenset(event for (hook_events,) in connection.execute(query) for event in hook_events)
            known = self._wanted = (now, wanted)
        return "*" in known[1] or not known[1].isdisjoint(events)

    def webhooks_changed(self) -> None:
        """A webhook was added, changed or removed here."""
        self._wanted = None

    def add(
        self, connection: Connection, event: str, data: dict[str, Any], *, only: int | None = None
    ) -> str | None:
        """Add ``event`` for every enabled webhook that wants it (``only``: that webhook alone); the
        event id, or ``None`` when no webhook wants it (nothing is written then)."""
        query = sa.select(col(Webhook.id), col(Webhook.events)).where(col(Webhook.enabled).is_(True))
        if only is not None:
            query = query.where(col(Webhook.id) == only)
        wanted = [
            hook_id
            for hook_id, events in connection.execute(query)
            if only is not None or "*" in events or event in events
        ]
        if not wanted:
            return None
        now = self._clock.time()
        event_id = "evt_" + secrets.token_hex(12)
        document = {"id": event_id, "event": event, "at": now, "workspace": self.workspace, "data": data}
        payload = json.dumps(document, separators=(",", ":"))
        connection.execute(
            sa.insert(WebhookDelivery),
            [
                {
                    "webhook_id": hook_id, "event_id": event_id, "event": event, "payload": payload,
                    "status": "pending", "attempts": 0, "next_attempt_at": now, "created_at": now,
                }
                for hook_id in wanted
            ],
        )  # fmt: skip
        return event_id

    def raise_event(
        self,
        engine: Engine,
        event: str,
        describe: Callable[[Connection], dict[str, Any]],
        *,
        once_per: tuple[str, float] | None = None,
    ) -> str | None:
        """Write one event about in-memory state right after it changed, in a transaction of its
        own, with the data ``describe`` reads (blocking: a worker thread's call); the event id, or
        ``None`` when no webhook wants it.

        ``once_per`` (key, seconds): only when no event of that key was raised in that time, by
        this process or any other on the database (``None`` otherwise); the mark is taken in the
        same transaction, and left as it was when no webhook wants the event."""
        with engine.connect() as connection, connection.begin() as transaction:
            if once_per is not None and not self._take_mark(connection, *once_per):
                return None
            event_id = self.add(connection, event, describe(connection))
            if event_id is None:
                transaction.rollback()
                return None
        self.added()
        return event_id

    def _take_mark(self, connection: Connection, key: str, period_s: float) -> bool:
        """Set ``key``'s mark to now unless it was set less than ``period_s`` ago: whether it was
        set. One conditional upsert: on PostgreSQL a second replica's waits for the first's
        transaction and then sees its mark; SQLite has one writer."""
        now = self._clock.time()
        dialect: ModuleType = sqlite
        if connection.dialect.name == "postgresql":  # imported only there (issue #49: idle memory)
            from sqlalchemy.dialects import postgresql

            dialect = postgresql
        statement = (
            dialect.insert(AlertMark)
            .values(key=key[:255], raised_at=now)
            .on_conflict_do_update(
                index_elements=[col(AlertMark.key)],
                set_={"raised_at": now},
                where=col(AlertMark.raised_at) <= now - period_s,
            )
            .returning(col(AlertMark.key))  # a row only when it wrote (rowcount is -1 on psycopg)
        )
        return connection.execute(statement).first() is not None

    def added(self) -> None:
        """The caller committed events: tell the deliverer."""
        if self.on_added is not None:
            self.on_added()


def account_ref(connection: Connection, account_id: int) -> dict[str, Any]:
    """An account as events name it: ``{"id","name"}`` (never its e-mail)."""
    name = connection.execute(sa.select(col(Account.name)).where(col(Account.id) == account_id)).scalar()
    return {"id": account_id, "name": name}


def group_ref(connection: Connection, group_id: int | None) -> dict[str, Any] | None:
    """A group as events name it: ``{"id","name"}``."""
    if group_id is None:
        return None
    query = sa.select(col(ResourceGroup.name)).where(col(ResourceGroup.id) == group_id)
    name = connection.execute(query).scalar()
    return {"id": group_id, "name": name}
