"""Retention (HIST-6): at most ``max_records`` records, none started more than ``days`` ago.

The cleanup runs inside the caller's transaction, both when records are written and when history is
read, so nobody ever sees a record the rules say is gone. IDs come from SQLite ``AUTOINCREMENT``:
deleting the newest rows never lets an ID come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from sublane_core import Settings
from sublane_history._statements import DriverStatement

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


# Both run for every batch the writer stores: compiled once, and cheap when there is nothing to do.
# The surplus is counted (``count(*)`` reads the smallest index page by page) and the oldest rows by
# ID are deleted, so SQLite walks only the rows that go; an ``OFFSET 5000`` from the newest walked all
# 5,000 kept rows every time. IDs only grow, so "oldest" is by ID.
_AGED: Final = DriverStatement(
    sa.text("DELETE FROM request_records WHERE started_at < :cutoff"),
    ("cutoff",),
)
_SURPLUS: Final = DriverStatement(
    sa.text(
        "DELETE FROM request_records WHERE id IN (SELECT id FROM request_records ORDER BY id LIMIT "
        "CASE WHEN (SELECT count(*) FROM request_records) > :kept "
        "THEN (SELECT count(*) FROM request_records) - :kept ELSE 0 END)"
    ),
    ("kept",),
)


def apply_retention(connection: sa.Connection, retention: Retention, now: float) -> int:
    """Delete what ``retention`` no longer keeps, in the caller's transaction; the number deleted.

    Aged records go first, so the count is of what they leave (and the transaction holds SQLite's
    write lock before it counts).
    """
    aged = _AGED.execute(connection, [(retention.cutoff(now),)])
    surplus = _SURPLUS.execute(connection, [(retention.max_records,)])
    return int(aged.rowcount or 0) + int(surplus.rowcount or 0)
