"""Usage summaries (TEAM-3): every finished attempt added to UTC day and hour buckets as it is recorded.

The history writer calls :meth:`UsageWriter.add` inside the transaction that inserts the records, so
a summary never disagrees with what was stored and nothing is ever recomputed by scanning history.
Day buckets are per member × group × provider × model label; a member gets at most
:data:`MAX_MODEL_LABELS` model labels a day, later models are counted under :data:`OTHER_MODEL`.
Hour buckets are per member and feed the hour-of-week heatmap. Both are kept :data:`KEPT_DAYS`
days; older buckets are deleted lazily, by the first write of each UTC day. Group hour buckets
(member × group × hour: tokens only) give a member's share of a group's recent tokens (POOL-1)
whatever history keeps; they are kept :data:`GROUP_HOURS_KEPT_S`.

Counts that an attempt did not report stay unknown: its tokens are not added (a column stays
``NULL`` while no attempt in the bucket reported it) and it is counted in ``unknown_usage_requests``.
An attempt that never reached an account (rejected or canceled before routing) used no tokens, and
adds a known zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from sublane_core import NO_GROUP, NO_PROVIDER, signals, storable_text
from sublane_history._cache_rate import hit_rate
from sublane_history._statements import DriverStatement
from sublane_history._tables import (
    USAGE_ACCOUNT_DAYS,
    USAGE_CACHE_ACCOUNTS,
    USAGE_DAYS,
    USAGE_GROUP_HOURS,
    USAGE_HOURS,
)

DAY_S: Final = 86_400
KEPT_DAYS: Final = 90
HOUR_S: Final = 3600
GROUP_HOURS_KEPT_S: Final = 2 * DAY_S
MAX_MODEL_LABELS: Final = 64
OTHER_MODEL: Final = "other"
OUTCOME_COLUMNS: Final = ("success", "incomplete", "error", "canceled", "rejected")
TOKEN_COLUMNS: Final = ("input_tokens", "output_tokens", "cached_tokens")
#: COST-4: input and cached tokens of the attempts that reported cache figures.
HIT_COLUMNS: Final = ("hit_input_tokens", "hit_cached_tokens")


def utc_day(moment: float) -> int:
    """Unix seconds of the UTC midnight that begins the day of ``moment``."""
    return math.floor(moment / DAY_S) * DAY_S


def usage_cutoff(now: float) -> int:
    """The oldest day kept at ``now``: today and the :data:`KEPT_DAYS` − 1 days before it."""
    return utc_day(now) - (KEPT_DAYS - 1) * DAY_S


def add_known(total: int | None, value: int | None) -> int | None:
    """``total + value`` where ``None`` means unknown: an unknown value leaves the total as it is."""
    if value is None:
        return total
    return value if total is None else total + value


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


@dataclass(slots=True)
class _Day:
    """What one batch adds to one day bucket."""

    requests: int = 0
    success: int = 0
    incomplete: int = 0
    error: int = 0
    canceled: int = 0
    rejected: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    unknown_usage_requests: int = 0
    hit_input_tokens: int | None = None
    hit_cached_tokens: int | None = None
    cost_usd: float | None = None
    unpriced_tokens: int = 0


@dataclass(slots=True)
class _CacheAccount:
    """What one batch adds to one member's day on one account (COST-4)."""

    requests: int = 0
    hit_input_tokens: int = 0
    hit_cached_tokens: int = 0


@dataclass(slots=True)
class _AccountDay:
    """What one batch adds to one account's day (COST-2 by account, COST-3)."""

    provider: str
    requests: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    unpriced_tokens: int = 0


def add_cost(total: float | None, cost: float | None) -> float | None:
    """``total + cost`` where ``None`` is an unpriced attempt: it leaves the total as it is."""
    if cost is None:
        return total
    return cost if total is None else total + cost


@dataclass(slots=True)
class _Hour:
    requests: int = 0
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class AttemptUsage:
    """What one finished attempt adds to the summaries: its outcome and its token counts (``None``
    where unknown)."""

    outcome: str
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    unknown: bool

    @property
    def has_cache_figures(self) -> bool:
        """Whether the attempt reported what COST-4's hit rate needs (:func:`hit_rate` is a number)."""
        return hit_rate(self.input_tokens, self.cached_tokens) is not None

    @classmethod
    def of(cls, payload: signals.RequestFinished) -> AttemptUsage:
        outcome = payload.outcome if payload.outcome in OUTCOME_COLUMNS else "error"
        if payload.outcome == "client_version":  # CLIENT-3: a refusal of the client, not a failure
            outcome = "rejected"
        if payload.account_id is None:  # never sent upstream: known to have used nothing
            return cls(outcome, 0, 0, 0, unknown=False)
        input_tokens, output_tokens = _count(payload.input_tokens), _count(payload.output_tokens)
        return cls(
            outcome,
            input_tokens,
            output_tokens,
            _count(payload.cached_tokens),
            unknown=input_tokens is None or output_tokens is None,
        )

    @property
    def tokens(self) -> int | None:
        """Input + output tokens, or ``None`` when neither is known."""
        return add_known(self.input_tokens, self.output_tokens)


def reported_tokens(payload: signals.RequestFinished) -> int | None:
    """Input + output tokens of an attempt as a budget counts them: what was reported (``None``
    when neither count was); 0 for an attempt that never reached an account."""
    if payload.account_id is None:
        return 0
    return add_known(_count(payload.input_tokens), _count(payload.output_tokens))


def _upsert_sql(table: sa.Table, names: tuple[str, ...]) -> DriverStatement:
    """``INSERT … ON CONFLICT (key) DO UPDATE`` adding a row (values for every column, in the order
    of ``names``) to the bucket with the same key.

    Written out once as text (SQLite and PostgreSQL both speak it) and run with tuples: the writer
    runs it for every batch, and building and compiling an expression each time cost more than the
    write itself. A nullable column is a sum of known values: an unknown (``NULL``) addend leaves it
    as it is.
    """
    if sorted(names) != sorted(column.name for column in table.columns):
        raise ValueError(f"{table.name}: the upsert needs every column once")
    keys = [column.name for column in table.primary_key.columns]
    updates = []
    for column in (table.c[name] for name in names):
        if column.name in keys:
            continue
        name, new = column.name, f"excluded.{column.name}"
        if column.nullable:
            updates.append(
                f"{name} = CASE WHEN {new} IS NULL THEN {table.name}.{name} "
                f"WHEN {table.name}.{name} IS NULL THEN {new} ELSE {table.name}.{name} + {new} END"
            )
        else:
            updates.append(f"{name} = {table.name}.{name} + {new}")
    # Only names from our own schema go into the text; every value is a bound parameter.
    insert = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})"  # noqa: S608
    text = sa.text(f"{insert} ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {', '.join(updates)}")
    return DriverStatement(text, names)


_DAY_KEY: Final = ("day", "user_id", "group_id", "provider", "model")
_DAY_COUNTS: Final = (
    "requests", *OUTCOME_COLUMNS, *TOKEN_COLUMNS, "unknown_usage_requests", *HIT_COLUMNS, "cost_usd",
    "unpriced_tokens",
)  # fmt: skip
_UPSERT_DAYS: Final = _upsert_sql(USAGE_DAYS, (*_DAY_KEY, *_DAY_COUNTS))
_ACCOUNT_COUNTS: Final = ("requests", "input_tokens", "output_tokens", "cost_usd", "unpriced_tokens")
_UPSERT_ACCOUNT_DAYS: Final = _upsert_sql(
    USAGE_ACCOUNT_DAYS, ("day", "account_id", "provider", *_ACCOUNT_COUNTS)
)
_UPSERT_HOURS: Final = _upsert_sql(USAGE_HOURS, ("day", "hour", "user_id", "requests", "tokens"))
_UPSERT_CACHE_ACCOUNTS: Final = _upsert_sql(
    USAGE_CACHE_ACCOUNTS, ("day", "user_id", "account_id", "requests", *HIT_COLUMNS)
)
_UPSERT_GROUP_HOURS: Final = _upsert_sql(USAGE_GROUP_HOURS, ("hour", "group_id", "user_id", "tokens"))


class UsageWriter:
    """Adds attempts to the usage buckets. Owned by the history writer thread (not thread-safe).

    It remembers which model labels each member has today (and yesterday, for attempts that began
    before midnight), so the label cap costs one query per member and day, not one per write.
    """

    def __init__(self, max_labels: int = MAX_MODEL_LABELS) -> None:
        self.max_labels = max_labels
        self._labels: dict[tuple[int, int], set[str]] = {}
        self._cleaned_day: int | None = None

    def forget(self) -> None:
        """Drop what is remembered (after a failed transaction: the labels may not have been stored)."""
        self._labels.clear()
        self._cleaned_day = None

    def add(
        self,
        connection: sa.Connection,
        payloads: Sequence[signals.RequestFinished],
        now: float,
        costs: Sequence[float | None] | None = None,
    ) -> None:
        """Add ``payloads`` to the buckets in the caller's transaction; expire old days once a day.

        ``costs``: each attempt's cost (COST-2), ``None`` where unpriced; its tokens are then
        counted in ``unpriced_tokens``."""
        days: dict[tuple[int, int, int, str, str], _Day] = {}
        hours: dict[tuple[int, int, int], _Hour] = {}
        accounts: dict[tuple[int, int, int], _CacheAccount] = {}
        account_days: dict[tuple[int, int], _AccountDay] = {}
        group_hours: dict[tuple[int, int, int], int | None] = {}
        for index, payload in enumerate(payloads):
            usage = AttemptUsage.of(payload)
            cost = costs[index] if costs is not None else None
            started = float(payload.started_at)
            day = utc_day(started)
            user_id = payload.user_id
            key = (
                day,
                user_id,
                payload.group_id if payload.group_id is not None else NO_GROUP,
                (payload.provider or NO_PROVIDER)[:32],
                self._label(connection, user_id, day, storable_text(payload.model[:128])),
            )
            bucket = days.get(key)
            if bucket is None:
                bucket = days[key] = _Day()
            bucket.requests += 1
            setattr(bucket, usage.outcome, getattr(bucket, usage.outcome) + 1)
            bucket.input_tokens = add_known(bucket.input_tokens, usage.input_tokens)
            bucket.output_tokens = add_known(bucket.output_tokens, usage.output_tokens)
            bucket.cached_tokens = add_known(bucket.cached_tokens, usage.cached_tokens)
            bucket.unknown_usage_requests += usage.unknown
            if payload.account_id is not None and usage.has_cache_figures:
                cached, fed = usage.cached_tokens or 0, usage.input_tokens or 0
                bucket.hit_input_tokens = add_known(bucket.hit_input_tokens, fed)
                bucket.hit_cached_tokens = add_known(bucket.hit_cached_tokens, cached)
                account_key = (day, user_id, payload.account_id)
                served = accounts.get(account_key)
                if served is None:
                    served = accounts[account_key] = _CacheAccount()
                served.requests += 1
                served.hit_input_tokens += fed
                served.hit_cached_tokens += cached
            unpriced = (usage.tokens or 0) if cost is None else 0
            bucket.cost_usd = add_cost(bucket.cost_usd, cost)
            bucket.unpriced_tokens += unpriced
            if payload.account_id is not None:
                account = account_days.get((day, payload.account_id))
                if account is None:
                    account = account_days[(day, payload.account_id)] = _AccountDay(key[3])
                account.requests += 1
                account.input_tokens = add_known(account.input_tokens, usage.input_tokens)
                account.output_tokens = add_known(account.output_tokens, usage.output_tokens)
                account.cost_usd = add_cost(account.cost_usd, cost)
                account.unpriced_tokens += unpriced
            hour_key = (day, min(23, math.floor((started - day) / 3600)), user_id)
            hour = hours.get(hour_key)
            if hour is None:
                hour = hours[hour_key] = _Hour()
            hour.requests += 1
            hour.tokens = add_known(hour.tokens, usage.tokens)
            group_key = (math.floor(started / HOUR_S) * HOUR_S, key[2], user_id)
            group_hours[group_key] = add_known(group_hours.get(group_key), usage.tokens)
        if days:
            _UPSERT_DAYS.execute(connection, [_day_row(key, bucket) for key, bucket in days.items()])
            hour_rows = [(*key, cell.requests, cell.tokens) for key, cell in hours.items()]
            _UPSERT_HOURS.execute(connection, hour_rows)
            _UPSERT_GROUP_HOURS.execute(connection, [(*key, tokens) for key, tokens in group_hours.items()])
        if accounts:
            account_rows = [
                (*key, cell.requests, cell.hit_input_tokens, cell.hit_cached_tokens)
                for key, cell in accounts.items()
            ]
            _UPSERT_CACHE_ACCOUNTS.execute(connection, account_rows)
        if account_days:
            day_rows = [
                (day, account_id, cell.provider, *(getattr(cell, name) for name in _ACCOUNT_COUNTS))
                for (day, account_id), cell in account_days.items()
            ]
            _UPSERT_ACCOUNT_DAYS.execute(connection, day_rows)
        self._expire(connection, now)

    def _label(self, connection: sa.Connection, user_id: int, day: int, model: str) -> str:
        """``model``, or :data:`OTHER_MODEL` once the member has :attr:`max_labels` others that day."""
        labels = self._labels.get((user_id, day))
        if labels is None:
            labels = set(
                connection.execute(
                    sa.select(USAGE_DAYS.c.model)
                    .where(USAGE_DAYS.c.user_id == user_id, USAGE_DAYS.c.day == day)
                    .distinct()
                ).scalars()
            )
            self._labels[(user_id, day)] = labels
        if model in labels:
            return model
        if len(labels) - (OTHER_MODEL in labels) >= self.max_labels:
            labels.add(OTHER_MODEL)
            return OTHER_MODEL
        labels.add(model)
        return model

    def _expire(self, connection: sa.Connection, now: float) -> None:
        today = utc_day(now)
        if self._cleaned_day == today:
            return
        cutoff = usage_cutoff(now)
        connection.execute(sa.delete(USAGE_DAYS).where(USAGE_DAYS.c.day < cutoff))
        connection.execute(sa.delete(USAGE_HOURS).where(USAGE_HOURS.c.day < cutoff))
        connection.execute(sa.delete(USAGE_CACHE_ACCOUNTS).where(USAGE_CACHE_ACCOUNTS.c.day < cutoff))
        old_hours = USAGE_GROUP_HOURS.c.hour < now - GROUP_HOURS_KEPT_S
        connection.execute(sa.delete(USAGE_GROUP_HOURS).where(old_hours))
        connection.execute(sa.delete(USAGE_ACCOUNT_DAYS).where(USAGE_ACCOUNT_DAYS.c.day < cutoff))
        self._cleaned_day = today
        for key in [key for key in self._labels if key[1] < today - DAY_S]:
            del self._labels[key]


def _day_row(key: tuple[int, int, int, str, str], bucket: _Day) -> tuple[Any, ...]:
    """The values of a ``usage_days`` upsert: the key, then what the batch adds (``_UPSERT_DAYS``)."""
    return (*key, *(getattr(bucket, name) for name in _DAY_COUNTS))
