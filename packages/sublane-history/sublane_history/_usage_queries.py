"""Reading usage summaries (TEAM-3): totals, days, breakdowns and the hour-of-week heatmap of a range.

A personal summary is scoped with ``WHERE user_id = :viewer`` in every query, and it has no
breakdown by member: no parameter can show one member another member's numbers. The range is
whole UTC days ending today; the answer lists every day of it, with zeros where nothing happened.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import NO_GROUP, NO_PROVIDER, Clock
from sublane_history._cache_rate import weighted_hit_rate
from sublane_history._tables import (
    ACCOUNTS,
    GROUPS,
    USAGE_ACCOUNT_DAYS,
    USAGE_CACHE_ACCOUNTS,
    USAGE_DAYS,
    USAGE_GROUP_HOURS,
    USAGE_HOURS,
    USERS,
)
from sublane_history._usage import DAY_S, HIT_COLUMNS, OUTCOME_COLUMNS, TOKEN_COLUMNS, utc_day

RANGES: Final = (1, 7, 30, 90)
"""The ``days`` a summary may cover."""

COUNTERS: Final = (
    "requests", *OUTCOME_COLUMNS, *TOKEN_COLUMNS, "unknown_usage_requests", "cost_usd", "unpriced_tokens",
)  # fmt: skip
"""The fields of every totals and breakdown row, in answer order (COST-2 added the last two)."""
ACCOUNT_COUNTERS: Final = ("requests", "input_tokens", "output_tokens", "cost_usd", "unpriced_tokens")
"""The fields of a ``by_account`` row (COST-2)."""
#: Costs are answered to a millionth of a dollar: sums of floats carry noise below that.
COST_DIGITS: Final = 6
_NULLABLE = frozenset({*TOKEN_COLUMNS, "cost_usd"})

_SUMS = [sa.func.sum(USAGE_DAYS.c[name]).label(name) for name in (*COUNTERS, *HIT_COLUMNS)]
_ACCOUNT_SUMS = [sa.func.sum(USAGE_ACCOUNT_DAYS.c[name]).label(name) for name in ACCOUNT_COUNTERS]


def money(value: object) -> float | None:
    """A summed cost as answered: ``None`` (nothing priced) or dollars to :data:`COST_DIGITS`."""
    return None if value is None else round(float(str(value)), COST_DIGITS)


def _counters(row: Any, names: Sequence[str] = COUNTERS) -> dict[str, int | float | None]:
    """A row's sums: counts as integers (0 when empty), token sums ``None`` when none was known,
    the cost ``None`` when no attempt in it was priced."""
    values: dict[str, int | float | None] = {}
    for name in names:
        value = row[name] if row is not None else None
        if name == "cost_usd":
            values[name] = money(value)
        elif name in _NULLABLE:
            values[name] = None if value is None else int(value)
        else:
            values[name] = int(value or 0)
    if names is COUNTERS:  # COST-4's token-weighted hit rate, where the cache sums are
        values["hit_rate"] = _hit_rate(row)
    return values


def _hit_rate(row: Any) -> float | None:
    if row is None or row["hit_input_tokens"] is None or row["hit_cached_tokens"] is None:
        return None
    return weighted_hit_rate(int(row["hit_input_tokens"]), int(row["hit_cached_tokens"]))


def _empty() -> dict[str, int | float | None]:
    return {**{name: (None if name in _NULLABLE else 0) for name in COUNTERS}, "hit_rate": None}


def _by_tokens(row: dict[str, Any]) -> tuple[int, int]:
    tokens = int(row["input_tokens"] or 0) + int(row["output_tokens"] or 0)
    return (-tokens, -int(row["requests"]))


def weekday(day: int) -> int:
    """Monday = 0 … Sunday = 6 of the UTC day starting at ``day`` (1970-01-01 was a Thursday)."""
    return (day // DAY_S + 3) % 7


#: The largest value the usage tables' ``day`` columns hold (PostgreSQL's ``INTEGER``, a day of
#: 2038): a range past it holds no usage, and a bound past it must not overflow the comparison
#: (``GET /api/usage/value?month=9999-12`` answered 500 on PostgreSQL).
DAY_LIMIT = 2**31 - 1


class UsageReader:
    """Summaries of a range of days, for one member or for the whole team."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def group_shares(self, user_id: int, group_ids: list[int], hours: int) -> dict[int, float | None]:
        """POOL-1: ``user_id``'s percentage of each group's tokens in the last ``hours`` whole UTC
        hours and the one under way (``None`` for a group that used none), from the group hour
        buckets — right whatever history keeps, and with history off."""
        since = (math.floor(self._clock.time() / 3600) - hours) * 3600
        table = USAGE_GROUP_HOURS
        tokens = sa.func.coalesce(table.c.tokens, 0)
        mine = sa.case((table.c.user_id == user_id, tokens), else_=0)
        query = (
            sa.select(table.c.group_id, sa.func.sum(tokens), sa.func.sum(mine))
            .where(table.c.hour >= since, table.c.group_id.in_(group_ids))
            .group_by(table.c.group_id)
        )
        shares: dict[int, float | None] = dict.fromkeys(group_ids)
        with self._engine.connect() as connection:
            for group_id, total, own in connection.execute(query):
                # PostgreSQL sums integers as NUMERIC (a Decimal)
                shares[group_id] = round(100.0 * float(own) / float(total), 1) if total else None
        return shares

    def summary(
        self, days: int, *, viewer_id: int | None = None, user_id: int | None = None
    ) -> dict[str, Any]:
        """The TEAM-3 answer for the last ``days`` UTC days (today included).

        ``viewer_id`` scopes it to one member and leaves out ``by_member`` (the personal answer);
        otherwise ``user_id`` may narrow the team's summary to one member.
        """
        if days not in RANGES:
            raise ValueError(f"days must be one of {RANGES}")
        today = utc_day(self._clock.time())
        start, until = today - (days - 1) * DAY_S, today + DAY_S
        personal = viewer_id is not None
        member = viewer_id if personal else user_id
        scope: list[sa.ColumnElement[bool]] = [USAGE_DAYS.c.day >= start, USAGE_DAYS.c.day < until]
        hour_scope: list[sa.ColumnElement[bool]] = [USAGE_HOURS.c.day >= start, USAGE_HOURS.c.day < until]
        if member is not None:
            scope.append(USAGE_DAYS.c.user_id == member)
            hour_scope.append(USAGE_HOURS.c.user_id == member)
        with self._engine.connect() as connection:
            totals = connection.execute(sa.select(*_SUMS).where(*scope)).mappings().first()
            by_day = self._by_day(connection, scope, start, days)
            by_model = [
                {"model": row["model"], **_counters(row)}
                for row in self._grouped(connection, scope, [USAGE_DAYS.c.model])
            ]
            by_provider = [
                {"provider": row["provider"] if row["provider"] != NO_PROVIDER else None, **_counters(row)}
                for row in self._grouped(connection, scope, [USAGE_DAYS.c.provider])
            ]
            by_group = self._by_group(connection, scope)
            by_account = self._by_account(connection, start, until) if member is None else None
            answer: dict[str, Any] = {
                "range": {"from": start, "until": until, "days": days},
                "totals": _counters(totals) if totals is not None else _empty(),
                "by_day": by_day,
                "by_model": sorted(by_model, key=lambda row: (*_by_tokens(row), row["model"])),
                "by_provider": sorted(by_provider, key=_by_tokens),
                "by_group": sorted(by_group, key=_by_tokens),
            }
            if not personal:
                answer["by_member"] = sorted(self._by_member(connection, scope), key=_by_tokens)
                answer["cache_by_account"] = self._cache_by_account(connection, start, until, member)
            if by_account is not None:
                answer["by_account"] = sorted(by_account, key=_by_tokens)
            heatmap, heatmap_tokens = self._heatmap(connection, hour_scope)
        answer["heatmap"] = heatmap
        answer["heatmap_tokens"] = heatmap_tokens
        return answer

    @staticmethod
    def _grouped(
        connection: sa.Connection,
        scope: Sequence[sa.ColumnElement[bool]],
        keys: Sequence[sa.ColumnElement[Any]],
    ) -> Sequence[sa.RowMapping]:
        query = sa.select(*keys, *_SUMS).where(*scope).group_by(*keys)
        return connection.execute(query).mappings().all()

    def _by_day(
        self, connection: sa.Connection, scope: Sequence[sa.ColumnElement[bool]], start: int, days: int
    ) -> list[dict[str, Any]]:
        found = {row["day"]: row for row in self._grouped(connection, scope, [USAGE_DAYS.c.day])}
        answer = []
        for index in range(days):
            day = start + index * DAY_S
            row = found.get(day)
            answer.append(
                {
                    "day": dt.datetime.fromtimestamp(day, dt.UTC).date().isoformat(),
                    "from": day,
                    **(_counters(row) if row is not None else _empty()),
                }
            )
        return answer

    def _by_group(
        self, connection: sa.Connection, scope: Sequence[sa.ColumnElement[bool]]
    ) -> list[dict[str, Any]]:
        rows = self._grouped(connection, scope, [USAGE_DAYS.c.group_id])
        ids = [row["group_id"] for row in rows if row["group_id"] != NO_GROUP]
        query = sa.select(GROUPS.c.id, GROUPS.c.name).where(GROUPS.c.id.in_(ids))
        names: dict[int, str] = {row.id: row.name for row in connection.execute(query)}
        return [
            {
                "group_id": row["group_id"] if row["group_id"] != NO_GROUP else None,
                "group_name": names.get(row["group_id"]),
                **_counters(row),
            }
            for row in rows
        ]

    @staticmethod
    def _by_account(connection: sa.Connection, start: int, until: int) -> list[dict[str, Any]]:
        """COST-2 per account (the team's answer only: accounts are not any one member's)."""
        keys = [USAGE_ACCOUNT_DAYS.c.account_id, USAGE_ACCOUNT_DAYS.c.provider]
        query = (
            sa.select(*keys, ACCOUNTS.c.name, *_ACCOUNT_SUMS)
            .select_from(
                USAGE_ACCOUNT_DAYS.outerjoin(ACCOUNTS, ACCOUNTS.c.id == USAGE_ACCOUNT_DAYS.c.account_id)
            )
            .where(USAGE_ACCOUNT_DAYS.c.day >= start, USAGE_ACCOUNT_DAYS.c.day < until)
            .group_by(*keys, ACCOUNTS.c.name)
        )
        return [
            {
                "account_id": row["account_id"],
                "account_name": row["name"],
                "provider": row["provider"],
                **_counters(row, ACCOUNT_COUNTERS),
            }
            for row in connection.execute(query).mappings()
        ]

    def account_costs(self, start: float, until: float) -> list[dict[str, Any]]:
        """Per account: its provider, requests, tokens, cost and unpriced tokens over the UTC days
        from ``start`` to ``until`` (COST-3's value)."""
        first, last = utc_day(start), utc_day(until - 1) + DAY_S
        with self._engine.connect() as connection:
            return self._by_account(connection, min(first, DAY_LIMIT), min(last, DAY_LIMIT))

    def _by_member(
        self, connection: sa.Connection, scope: Sequence[sa.ColumnElement[bool]]
    ) -> list[dict[str, Any]]:
        rows = self._grouped(connection, scope, [USAGE_DAYS.c.user_id])
        ids = [row["user_id"] for row in rows]
        query = sa.select(USERS.c.id, USERS.c.username).where(USERS.c.id.in_(ids))
        names: dict[int, str] = {row.id: row.username for row in connection.execute(query)}
        return [
            {"user_id": row["user_id"], "username": names.get(row["user_id"]), **_counters(row)}
            for row in rows
        ]

    @staticmethod
    def _cache_by_account(
        connection: sa.Connection, start: int, until: int, member: int | None
    ) -> list[dict[str, Any]]:
        """COST-4: the token-weighted hit rate per account, over the attempts with cache figures."""
        table = USAGE_CACHE_ACCOUNTS
        scope = [table.c.day >= start, table.c.day < until]
        if member is not None:
            scope.append(table.c.user_id == member)
        query = (
            sa.select(
                table.c.account_id,
                ACCOUNTS.c.name,
                sa.func.sum(table.c.requests).label("requests"),
                sa.func.sum(table.c.hit_input_tokens).label("hit_input_tokens"),
                sa.func.sum(table.c.hit_cached_tokens).label("hit_cached_tokens"),
            )
            .select_from(table.outerjoin(ACCOUNTS, ACCOUNTS.c.id == table.c.account_id))
            .where(*scope)
            .group_by(table.c.account_id, ACCOUNTS.c.name)
        )
        rows = [
            {
                "account_id": row["account_id"],
                "account_name": row["name"],
                "requests": int(row["requests"] or 0),
                "input_tokens": int(row["hit_input_tokens"] or 0),
                "cached_tokens": int(row["hit_cached_tokens"] or 0),
                "hit_rate": _hit_rate(row),
            }
            for row in connection.execute(query).mappings()
        ]
        return sorted(rows, key=lambda row: (-row["input_tokens"], row["account_id"]))

    @staticmethod
    def _heatmap(
        connection: sa.Connection, scope: Sequence[sa.ColumnElement[bool]]
    ) -> tuple[list[list[int]], list[list[int]]]:
        """Requests and known tokens per UTC weekday (Monday first) × hour."""
        requests = [[0] * 24 for _ in range(7)]
        tokens = [[0] * 24 for _ in range(7)]
        query = (
            sa.select(
                USAGE_HOURS.c.day,
                USAGE_HOURS.c.hour,
                sa.func.sum(USAGE_HOURS.c.requests),
                sa.func.sum(USAGE_HOURS.c.tokens),
            )
            .where(*scope)
            .group_by(USAGE_HOURS.c.day, USAGE_HOURS.c.hour)
        )
        for day, hour, count, known in connection.execute(query):
            requests[weekday(day)][hour] += int(count or 0)
            tokens[weekday(day)][hour] += int(known or 0)
        return requests, tokens
