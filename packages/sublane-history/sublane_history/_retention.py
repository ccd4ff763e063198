"""Retention (HIST-6): at most ``max_records`` records, none started more than ``days`` ago.

The cleanup runs inside the caller's transaction, both when records are written and when history is
read, so nobody ever sees a record the rules say is gone. IDs come from SQLite ``AUTOINCREMENT``:
deleting the newest rows never lets an ID come back.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from sublane_core import Settings
from sublane_history._tables import RECORDS

DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class Retention:
    """How much history is kept: the newest ``max_records`` records of the last ``days`` days."""

    max_records: int = 5000
    days: float = 7.0

    def __post_init__(self) -> None:
        if self.max_records < 1 or self.days <= 0:
            raise ValueError("retention needs max_records >= 1 and days > 0")

    @classmethod
    def from_settings(cls, settings: Settings) -> Retention:
        """``SUBLANE_HISTORY_MAX_RECORDS`` and ``SUBLANE_HISTORY_DAYS``."""
        return cls(max_records=settings.history_max_records, days=settings.history_days)

    def cutoff(self, now: float) -> float:
        """The oldest start time kept at ``now``: a record exactly ``days`` old is still kept."""
        return now - self.days * DAY_S


def apply_retention(connection: sa.Connection, retention: Retention, now: float) -> int:
    """Delete what ``retention`` no longer keeps, in the caller's transaction; the number deleted."""
    aged = connection.execute(sa.delete(RECORDS).where(RECORDS.c.started_at < retention.cutoff(now)))
    # The newest record beyond the limit and everything older (IDs only grow, so "newest" is by ID).
    boundary = (
        sa.select(RECORDS.c.id)
        .order_by(RECORDS.c.id.desc())
        .limit(1)
        .offset(retention.max_records)
        .scalar_subquery()
    )
    surplus = connection.execute(sa.delete(RECORDS).where(RECORDS.c.id <= boundary))
    return int(aged.rowcount or 0) + int(surplus.rowcount or 0)
