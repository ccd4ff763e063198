"""Cooldowns in SQLite (COOL-7): written as they change, read back at start-up.

Writes go to a small background thread queue so that a request never waits on the database for a
cooldown; a write that fails is logged (sanitized) while the in-memory cooldown keeps blocking.
"""

from __future__ import annotations

import logging
import queue
import threading

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, delete, select

from sublane_core import AccountCooldown, Clock
from sublane_scheduler import Cooldown, CooldownBook

_log = logging.getLogger("sublane.cooldowns")

# Account-wide penalties older versions wrote for transient failures; only 429s cool an account now.
LEGACY_TRANSIENT_REASONS = frozenset(
    {"transient", "model_failures", "stream_error", "upstream_error", "timeout"}
)


class CooldownStore:
    """Persists :class:`~sublane_scheduler.CooldownBook` changes."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
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
        while (item := self._queue.get()) is not None:
            try:
                self._write(*item)
            except Exception as exc:
                _log.error("could not store a cooldown of account %s: %s", item[1], type(exc).__name__)

    def _write(self, cooldown: Cooldown | None, account_id: int, model: str, revision: int) -> None:
        with Session(self._engine) as db:
            if cooldown is None:
                db.exec(
                    delete(AccountCooldown).where(
                        col(AccountCooldown.account_id) == account_id, col(AccountCooldown.model) == model
                    )
                )
            else:
                row = db.get(AccountCooldown, (account_id, model)) or AccountCooldown(
                    account_id=account_id, model=model, until=0, reason="", updated_at=0
                )
                row.until, row.reason, row.failure_streak = (
                    cooldown.until,
                    cooldown.reason[:32],
                    cooldown.streak,
                )
                row.runtime_revision, row.updated_at = revision, self._clock.time()
                db.add(row)
            db.commit()

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
