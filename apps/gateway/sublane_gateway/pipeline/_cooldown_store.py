"""Cooldowns in SQLite (COOL-7): written as they change, read back at start-up.

Writes go to a small background thread queue so that a request never waits on the database for a
cooldown; a write that fails is logged (sanitized) while the in-memory cooldown keeps blocking.

ALERT-2: the alerts about cooldowns are added to the outbox in the transaction that writes the
cooldown row: ``account.cooling`` when an account-wide cooldown starts (a re-cooling after a failed
recovery probe is the same episode), ``account.recovered`` when it is cleared (a successful probe
or Clear cooldown), ``model.limited`` when a provider's model limit (AGL) starts.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import (
    ACCOUNT_WIDE,
    AccountCooldown,
    AlertOutbox,
    Clock,
    account_ref,
    background_thread_begins,
)
from sublane_scheduler import Cooldown, CooldownBook

_log = logging.getLogger("sublane.cooldowns")

# Account-wide penalties older versions wrote for transient failures; only 429s cool an account now.
LEGACY_TRANSIENT_REASONS = frozenset(
    {"transient", "model_failures", "stream_error", "upstream_error", "timeout"}
)


class CooldownStore:
    """Persists :class:`~sublane_scheduler.CooldownBook` changes."""

    def __init__(self, engine: Engine, clock: Clock, outbox: AlertOutbox | None = None) -> None:
        self._outbox = outbox
        self._engine = engine
        self._clock = clock
        self._queue: queue.SimpleQueue[tuple[Cooldown | None, int, str, int] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def save(self, cooldown: Cooldown | None, account_id: int, model: str, revision: int) -> None:
        """Queue a write (``None``: the cooldown was cleared). Never blocks."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="sublane-cooldown-writer", daemon=True)
            self._thread.start()
        self._queue.put((cooldown, account_id, model, revision))

    def flush(self) -> None:
        """Stop the writer after the queued writes (shutdown, tests)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._thread = None

    def _drain(self) -> None:
        background_thread_begins()
        while (item := self._queue.get()) is not None:
            try:
                self._write(*item)
            except Exception as exc:
                _log.error("could not store a cooldown of account %s: %s", item[1], type(exc).__name__)

    def _write(self, cooldown: Cooldown | None, account_id: int, model: str, revision: int) -> None:
        alert: tuple[str, dict[str, Any]] | None = None
        with Session(self._engine) as db:
            row = db.get(AccountCooldown, (account_id, model))
            if cooldown is None:
                if row is not None:
                    db.delete(row)
                    if model == ACCOUNT_WIDE and row.reason not in LEGACY_TRANSIENT_REASONS:
                        alert = ("account.recovered", {"cleared": "cooldown"})
            else:
                now = self._clock.time()
                retry_after_s = max(0, round(cooldown.until - now))
                if model == ACCOUNT_WIDE and row is None:
                    alert = ("account.cooling", {"reason": cooldown.reason, "retry_after_s": retry_after_s})
                elif cooldown.reason.startswith("provider:") and (row is None or row.until <= now):
                    reason = cooldown.reason.removeprefix("provider:")  # AGL: a model's own limit
                    alert = (
                        "model.limited",
                        {"model": model, "reason": reason, "retry_after_s": retry_after_s},
                    )
                row = row or AccountCooldown(
                    account_id=account_id, model=model, until=0, reason="", updated_at=0
                )
                row.until, row.reason, row.failure_streak = (
                    cooldown.until,
                    cooldown.reason[:32],
                    cooldown.streak,
                )
                row.runtime_revision, row.updated_at = revision, now
                db.add(row)
            written = None
            if alert is not None and self._outbox is not None:
                db.flush()
                event, data = alert
                connection = db.connection()
                data = dict(data, account=account_ref(connection, account_id))
                written = self._outbox.add(connection, event, data)
            db.commit()
        if written is not None and self._outbox is not None:
            self._outbox.added()

    async def restore(self, book: CooldownBook) -> None:
        """Load stored cooldowns into ``book`` (start-up).

        COOL-8: an account-wide row that is not a rate limit (a transient penalty of an older
        version, whose model is unknown) is dropped; real rate limits are kept.
        """
        rows = await anyio.to_thread.run_sync(self._load)
        for row in rows:
            if row.model == "" and row.reason in LEGACY_TRANSIENT_REASONS:
                self.save(None, row.account_id, "", row.runtime_revision)
                continue
            book.restore(
                Cooldown(row.account_id, row.model, row.until, row.reason, streak=row.failure_streak),
                row.runtime_revision,
            )

    def _load(self) -> list[AccountCooldown]:
        with Session(self._engine) as db:
            return list(db.exec(select(AccountCooldown)))
