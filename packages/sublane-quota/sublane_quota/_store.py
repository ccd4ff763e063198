"""Quota observations in SQLite (QUOTA-2, QUOTA-8): written before they are published, read at start.

Every write is conditional, in one statement per window, so that no order of writers can make an
older answer win:

- the account's **lifecycle revision** must still be the observation's (a refresh that began
  before a disable/enable or a re-authorization writes nothing);
- a stored window is replaced only by an observation at least as new (a refresh that was already
  running when a newer answer arrived is rejected).

Rows of earlier lifecycles are deleted when a new one begins; readers also ignore them.

ALERT-2: when an outbox is given, a write that makes the account (or one model of it) run out of
quota adds ``account.quota_exhausted`` to the same transaction, and one that ends it adds
``account.quota_recovered``: the alert exists exactly when the observation does.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, delete, select

from sublane_core import Account, AlertOutbox, QuotaObservation, account_ref, signals

_UPSERT: Final = sa.text(
    'INSERT INTO quota_observations (account_id, "window", model, main, used_percent, window_seconds,'
    " resets_at, limit_reached, plan, observed_at, lifecycle_revision)"
    " SELECT :account_id, :window, :model, :main, :used_percent, :window_seconds, :resets_at,"
    " :limit_reached, :plan, :observed_at, :revision"
    " WHERE EXISTS (SELECT 1 FROM accounts WHERE id = :account_id AND lifecycle_revision = :revision)"
    ' ON CONFLICT (account_id, "window", model) DO UPDATE SET'
    " main = excluded.main, used_percent = excluded.used_percent,"
    " window_seconds = excluded.window_seconds, resets_at = excluded.resets_at,"
    " limit_reached = excluded.limit_reached, plan = excluded.plan,"
    " observed_at = excluded.observed_at, lifecycle_revision = excluded.lifecycle_revision"
    " WHERE quota_observations.lifecycle_revision < excluded.lifecycle_revision"
    " OR (quota_observations.lifecycle_revision = excluded.lifecycle_revision"
    " AND quota_observations.observed_at <= excluded.observed_at)"
)


_EVENTS: Final = ("account.quota_exhausted", "account.quota_recovered")


def _exhausted(connection: Connection, account_id: int, revision: int) -> dict[str, tuple[str, float | None]]:
    """The models ("": the whole account) a stored main window of this lifecycle says are out of
    quota, with that window's name and reset."""
    rows = connection.execute(
        sa.select(
            col(QuotaObservation.model),
            col(QuotaObservation.window),
            col(QuotaObservation.limit_reached),
            col(QuotaObservation.used_percent),
            col(QuotaObservation.resets_at),
            col(QuotaObservation.observed_at),
        ).where(
            col(QuotaObservation.account_id) == account_id,
            col(QuotaObservation.lifecycle_revision) == revision,
            col(QuotaObservation.main).is_(True),
        )
    )
    found: dict[str, tuple[str, float | None]] = {}
    for model, window, limit_reached, used_percent, resets_at, observed_at in rows:
        spent = limit_reached or (used_percent is not None and used_percent >= 100.0)
        if spent and (resets_at is None or resets_at > observed_at):
            found.setdefault(model, (window, resets_at))
    return found


class QuotaStore:
    """Reads and conditionally writes ``quota_observations`` (blocking: call from a worker thread)."""

    def __init__(self, engine: Engine, outbox: AlertOutbox | None = None) -> None:
        self._engine = engine
        self._outbox = outbox

    def write(self, observation: signals.QuotaObserved) -> tuple[signals.QuotaWindow, ...]:
        """Save what is newer than what is stored; returns the windows that were written."""
        written = []
        account_id, revision = observation.account_id, observation.lifecycle_revision
        with self._engine.begin() as connection:
            telling = self._outbox is not None and self._outbox.wants(connection, *_EVENTS)
            before = _exhausted(connection, account_id, revision) if telling else {}
            for window in observation.windows:
                result = connection.execute(
                    _UPSERT,
                    {
                        "account_id": observation.account_id,
                        "window": window.window[:64],
                        "model": window.model[:128],
                        "main": window.main,
                        "used_percent": window.used_percent,
                        "window_seconds": window.window_seconds,
                        "resets_at": window.resets_at,
                        "limit_reached": window.limit_reached,
                        "plan": (observation.plan or None) and observation.plan[:64],
                        "observed_at": observation.observed_at,
                        "revision": observation.lifecycle_revision,
                    },
                )
                if result.rowcount:
                    written.append(window)
            told = telling and self._tell(
                connection, account_id, before, _exhausted(connection, account_id, revision)
            )
        if told and self._outbox is not None:
            self._outbox.added()
        return tuple(written)

    def _tell(
        self,
        connection: Connection,
        account_id: int,
        before: dict[str, tuple[str, float | None]],
        after: dict[str, tuple[str, float | None]],
    ) -> bool:
        """Add the exhaustion changes between ``before`` and ``after`` to the outbox."""
        outbox = self._outbox
        if outbox is None or before.keys() == after.keys():
            return False
        account = account_ref(connection, account_id)
        for model in sorted(after.keys() - before.keys()):
            window, resets_at = after[model]
            data = {"account": account, "model": model or None, "window": window, "resets_at": resets_at}
            outbox.add(connection, "account.quota_exhausted", data)
        for model in sorted(before.keys() - after.keys()):
            data = {"account": account, "model": model or None, "window": before[model][0]}
            outbox.add(connection, "account.quota_recovered", data)
        return True

    def drop_before(self, account_id: int, revision: int) -> None:
        """Delete the account's rows of lifecycles before ``revision``."""
        with Session(self._engine) as db:
            db.exec(
                delete(QuotaObservation).where(
                    col(QuotaObservation.account_id) == account_id,
                    col(QuotaObservation.lifecycle_revision) < revision,
                )
            )
            db.commit()

    def load(self) -> list[signals.QuotaObserved]:
        """Stored observations of each account's current lifecycle, one per (account, time)."""
        with Session(self._engine) as db:
            revisions = {
                account_id: revision
                for account_id, revision in db.exec(select(Account.id, Account.lifecycle_revision))
                if account_id is not None
            }
            rows = list(db.exec(select(QuotaObservation)))
        grouped: dict[tuple[int, float], list[QuotaObservation]] = {}
        for row in rows:
            if revisions.get(row.account_id) == row.lifecycle_revision:
                grouped.setdefault((row.account_id, row.observed_at), []).append(row)
        observations = []
        for (account_id, observed_at), group in grouped.items():
            observations.append(
                signals.QuotaObserved(
                    account_id=account_id,
                    lifecycle_revision=group[0].lifecycle_revision,
                    observed_at=observed_at,
                    plan=next((row.plan for row in group if row.plan), None),
                    windows=tuple(
                        signals.QuotaWindow(
                            window=row.window,
                            used_percent=row.used_percent,
                            window_seconds=row.window_seconds,
                            resets_at=row.resets_at,
                            limit_reached=row.limit_reached,
                            main=row.main,
                            model=row.model,
                        )
                        for row in group
                    ),
                )
            )
        return observations
