"""Where time goes, per provider (OPS-13): p50 and p95 of each part of the records' ``timing``.

A query of its own beside the usage summaries (which come from counters, not records): the
timings of the newest :data:`MAX_TIMED` records of the window that reached a provider, ranked in
Python (nearest rank), so SQLite and PostgreSQL answer alike.
"""

from __future__ import annotations

import math
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import Clock
from sublane_history._rows import TIMING_FIELDS
from sublane_history._tables import RECORDS

#: The newest records a window's percentiles are taken from (a bound on the query's cost).
MAX_TIMED: Final = 20_000


def percentile(ordered: list[int], share: float) -> int:
    """The nearest-rank percentile of an ascending, non-empty list."""
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


class TimingReader:
    """p50/p95 per provider of the OPS-13 timings of the records of the last ``days`` days."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def percentiles(self, days: int, user_id: int | None = None) -> dict[str, dict[str, Any]]:
        """``{provider: {"calls": n, "<part>_ms": {"p50": …, "p95": …}, …}}`` (timed calls only)."""
        since = self._clock.time() - days * 86400
        query = (
            sa.select(RECORDS.c.provider, RECORDS.c.timing)
            .where(
                RECORDS.c.started_at >= since,
                RECORDS.c.provider.is_not(None),
                RECORDS.c.timing.is_not(None),
            )
            .order_by(RECORDS.c.id.desc())
            .limit(MAX_TIMED)
        )
        if user_id is not None:
            query = query.where(RECORDS.c.user_id == user_id)
        parts: dict[str, dict[str, list[int]]] = {}
        with self._engine.connect() as connection:
            for provider, timing in connection.execute(query):
                if not isinstance(timing, dict):  # a JSON null
                    continue
                values = parts.setdefault(provider, {name: [] for name in TIMING_FIELDS})
                for name in TIMING_FIELDS:
                    value = timing.get(name)
                    if isinstance(value, int):
                        values[name].append(value)
        answer: dict[str, dict[str, Any]] = {}
        for provider, values in sorted(parts.items()):
            shown: dict[str, Any] = {"calls": len(values["total_ms"])}
            for name, found in values.items():
                found.sort()
                shown[name] = (
                    {"p50": percentile(found, 0.5), "p95": percentile(found, 0.95)} if found else None
                )
            answer[provider] = shown
        return answer
