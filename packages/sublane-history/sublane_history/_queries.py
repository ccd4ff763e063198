"""Reading history (HIST-6, HIST-7, HIST-8, HIST-9): pages, single records and filter choices.

Every read first applies retention in the same transaction, so an expired record is gone for
whoever looks. Personal scoping is a ``WHERE user_id = :viewer`` in the SQL itself, before ordering
and the page limit: no filter, cursor or ID can reach another member's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import Clock
from sublane_history._filters import HistoryFilter
from sublane_history._retention import Retention, apply_retention
from sublane_history._rows import OUTCOMES
from sublane_history._tables import ACCOUNTS, KEYS, RECORDS, USERS

PAGE_SIZE = 50
CHOICES_LIMIT = 200  # filter option lists stay bounded however varied the history is


@dataclass(frozen=True, slots=True)
class RecordRow:
    """One stored record with the names it refers to (``None`` where the row is gone)."""

    id: int
    request_id: str
    started_at: float
    duration_ms: int | None
    first_token_ms: int | None
    user_id: int
    key_id: int | None
    group_id: int | None
    account_id: int | None
    provider: str | None
    model: str
    protocol: str
    operation: str
    outcome: str
    error_code: str | None
    upstream_status: int | None
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    routing: dict[str, Any] | None
    served_model: str | None
    cache_miss_reason: str | None
    cache_write_tokens: int | None
    cost_usd: float | None
    timing: dict[str, Any] | None
    username: str | None
    key_name: str | None
    account_name: str | None
    account_exists: bool

    @property
    def account_deleted(self) -> bool:
        """The record names an account whose row was deleted since (HIST-9)."""
        return self.account_id is not None and not self.account_exists


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Up to :data:`PAGE_SIZE` records, newest first, and the cursor of the next page (or ``None``)."""

    items: list[RecordRow]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Choice:
    """One option of a filter list: an ID and its display name (``None`` when the row is gone)."""

    id: int
    name: str | None


@dataclass(frozen=True, slots=True)
class FilterChoices:
    """Filter options found in retained history within the viewer's scope (HIST-8)."""

    models: list[str]
    keys: list[Choice]
    outcomes: list[str]
    members: list[Choice]
    accounts: list[Choice]


_ROW_COLUMNS = (
    RECORDS,
    USERS.c.username,
    KEYS.c.name.label("key_name"),
    ACCOUNTS.c.name.label("account_name"),
    ACCOUNTS.c.id.label("account_row_id"),
)
_JOINED = (
    RECORDS.outerjoin(USERS, USERS.c.id == RECORDS.c.user_id)
    .outerjoin(KEYS, KEYS.c.id == RECORDS.c.key_id)
    .outerjoin(ACCOUNTS, ACCOUNTS.c.id == RECORDS.c.account_id)
)


def _row(mapping: sa.RowMapping) -> RecordRow:
    values = {name: mapping[name] for name in RecordRow.__dataclass_fields__ if name != "account_exists"}
    return RecordRow(**values, account_exists=mapping["account_row_id"] is not None)


def _conditions(filters: HistoryFilter, viewer_id: int | None) -> list[sa.ColumnElement[bool]]:
    conditions: list[sa.ColumnElement[bool]] = []
    if viewer_id is not None:
        conditions.append(RECORDS.c.user_id == viewer_id)
    if filters.outcome is not None:
        conditions.append(RECORDS.c.outcome == filters.outcome)
    if filters.model is not None:
        conditions.append(RECORDS.c.model == filters.model)
    if filters.key_id is not None:
        conditions.append(RECORDS.c.key_id == filters.key_id)
    if filters.request_id is not None:
        conditions.append(RECORDS.c.request_id == filters.request_id)
    if filters.since is not None:
        conditions.append(RECORDS.c.started_at >= filters.since)
    if filters.until is not None:
        conditions.append(RECORDS.c.started_at < filters.until)
    if filters.user_id is not None:
        conditions.append(RECORDS.c.user_id == filters.user_id)
    if filters.account_id is not None:
        conditions.append(RECORDS.c.account_id == filters.account_id)
    if filters.cursor is not None:
        conditions.append(RECORDS.c.id < filters.cursor)
    return conditions


class HistoryReader:
    """Reads retained history for an admin (``viewer_id=None``) or for one member (their user ID)."""

    def __init__(self, engine: Engine, clock: Clock, retention: Retention | None = None) -> None:
        self._engine = engine
        self._clock = clock
        self.retention = retention or Retention()

    def page(self, filters: HistoryFilter, *, viewer_id: int | None) -> HistoryPage:
        """One page of records matching ``filters``, newest first."""
        query = (
            sa.select(*_ROW_COLUMNS)
            .select_from(_JOINED)
            .where(*_conditions(filters, viewer_id))
            .order_by(RECORDS.c.id.desc())
            .limit(PAGE_SIZE + 1)
        )
        with self._engine.begin() as connection:
            apply_retention(connection, self.retention, self._clock.time())
            rows = [_row(row) for row in connection.execute(query).mappings()]
        more = len(rows) > PAGE_SIZE
        items = rows[:PAGE_SIZE]
        return HistoryPage(items, str(items[-1].id) if more else None)

    def get(self, request_id: str, *, viewer_id: int | None) -> RecordRow | None:
        """The record with ``request_id`` if it is retained and within the viewer's scope."""
        filters = HistoryFilter(request_id=request_id)
        query = sa.select(*_ROW_COLUMNS).select_from(_JOINED).where(*_conditions(filters, viewer_id))
        with self._engine.begin() as connection:
            apply_retention(connection, self.retention, self._clock.time())
            found = connection.execute(query).mappings().first()
        return _row(found) if found is not None else None

    def choices(self, *, viewer_id: int | None) -> FilterChoices:
        """Models, keys and outcomes in the viewer's retained history; for admins also members and
        accounts (an account deleted since has no name)."""
        scope = _conditions(HistoryFilter(), viewer_id)

        def distinct(*columns: Any, join: Any = RECORDS, where: Any = ()) -> Any:
            return (
                sa.select(*columns)
                .select_from(join)
                .where(*scope, *where)
                .distinct()
                .order_by(*columns)
                .limit(CHOICES_LIMIT)
            )

        with self._engine.begin() as connection:
            apply_retention(connection, self.retention, self._clock.time())
            models = list(connection.execute(distinct(RECORDS.c.model)).scalars())
            outcomes = set(connection.execute(distinct(RECORDS.c.outcome)).scalars())
            keys = connection.execute(
                distinct(
                    RECORDS.c.key_id,
                    KEYS.c.name,
                    join=RECORDS.outerjoin(KEYS, KEYS.c.id == RECORDS.c.key_id),
                    where=(RECORDS.c.key_id.is_not(None),),
                )
            ).all()
            members: Sequence[Any] = ()
            accounts: Sequence[Any] = ()
            if viewer_id is None:
                members = connection.execute(
                    distinct(
                        RECORDS.c.user_id,
                        USERS.c.username,
                        join=RECORDS.outerjoin(USERS, USERS.c.id == RECORDS.c.user_id),
                    )
                ).all()
                accounts = connection.execute(
                    distinct(
                        RECORDS.c.account_id,
                        ACCOUNTS.c.name,
                        join=RECORDS.outerjoin(ACCOUNTS, ACCOUNTS.c.id == RECORDS.c.account_id),
                        where=(RECORDS.c.account_id.is_not(None),),
                    )
                ).all()
        return FilterChoices(
            models=models,
            keys=[Choice(row[0], row[1]) for row in keys],
            outcomes=[outcome for outcome in OUTCOMES if outcome in outcomes],
            members=[Choice(row[0], row[1]) for row in members],
            accounts=[Choice(row[0], row[1]) for row in accounts],
        )
