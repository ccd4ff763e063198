"""The metered spend ledger (PAID-3): what metered accounts' calls cost per UTC month, per group and
per member, and whether a caller's metered use is over a cap.

**Where the sums live.** ``metered_spend`` holds one row per (UTC month, group, member). The history
writer thread adds each written batch's metered attempts to it in the transaction that stores their
records (:meth:`SpendLedger.add`, one ``INSERT … ON CONFLICT DO UPDATE SET usd = usd + excluded.usd``
per row: atomic on SQLite and PostgreSQL, so two replicas adding to one row both count). A metered
attempt is counted exactly once, exactly when its record is written, and the sums survive a restart.
The cost is the record's own ``cost_usd`` (COST-2, the prices of the moment it is written). An
attempt whose cost is unknown (an unpriced model, a served call that reported no usage) is never
counted as 0 silently: it is counted in ``uncosted`` (and an unpriced metered model is refused
before it is served, :meth:`SpendLedger.blocked`).

**What selection reads.** :meth:`SpendLedger.blocked` is synchronous and reads memory only: this
month's sums and every cap, as one snapshot replaced whole (no lock for readers). The snapshot is
read again from the database by the writer in the transaction that adds this process's spend
(so it also holds what other replicas had committed then), and every :data:`REFRESH_S` by a
background thread (other replicas' spend and caps changed through another replica). "Exact" here:
the stored sums are exact; a replica sees its own calls' spend once their records are written (the
history writer's next batch, at most 0.1 s after a call ends) and other replicas' within
:data:`REFRESH_S` more. A cap therefore holds within the cost of the calls already running when it
is reached (they finish: nothing is cut off mid-answer), plus those that end within that window.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from sublane_core import NO_GROUP, ROLE_ADMIN, Clock, background_thread_begins, signals
from sublane_pricing._book import PriceBook

_log = logging.getLogger("sublane.pricing")

#: How often the background thread reads the sums and caps again (other replicas' spend, SCALE-2's
#: "a change made through one replica's API takes effect on every replica within 1 s").
REFRESH_S: Final = 0.5
BUDGET_EXHAUSTED: Final = "metered_budget_exhausted"
UNPRICED: Final = "unpriced_model"
#: ``Retry-After`` of a refusal at a cap is at most a day (as TEAM-4's): the reset may be weeks away.
RETRY_AFTER_CAP_S: Final = 86_400.0
RESET_HEADER: Final = "X-Metered-Budget-Reset"
#: Outcomes of a call that reached an upstream and was answered: its cost is owed even without usage.
_SERVED: Final = frozenset({"success", "incomplete"})
#: Record operations the metered APIs do not bill (Anthropic's and Gemini's token counting).
_FREE_OPERATIONS: Final = frozenset({"count_tokens"})

_SPEND: Final = SQLModel.metadata.tables["metered_spend"]
_GROUPS: Final = SQLModel.metadata.tables["resource_groups"]
_USERS: Final = SQLModel.metadata.tables["users"]

# Only names of our own schema go into the text; every value is a bound parameter.
_ADD: Final = sa.text(
    "INSERT INTO metered_spend (month, group_id, user_id, usd, calls, uncosted) "
    "VALUES (:month, :group_id, :user_id, :usd, :calls, :uncosted) "
    "ON CONFLICT (month, group_id, user_id) DO UPDATE SET "
    "usd = metered_spend.usd + excluded.usd, calls = metered_spend.calls + excluded.calls, "
    "uncosted = metered_spend.uncosted + excluded.uncosted"
)


def month_bounds(moment: float) -> tuple[int, int]:
    """``(start, reset)``: Unix seconds of the first UTC midnight of ``moment``'s month and of the next."""
    day = dt.datetime.fromtimestamp(moment, dt.UTC).date()
    first = dt.datetime(day.year, day.month, 1, tzinfo=dt.UTC)
    following = dt.datetime(day.year + day.month // 12, day.month % 12 + 1, 1, tzinfo=dt.UTC)
    return int(first.timestamp()), int(following.timestamp())


@dataclass(frozen=True, slots=True)
class MonthSpend:
    """One UTC month's metered spend: per group, per member and per (group, member), in dollars."""

    month: int
    groups: dict[int, float] = field(default_factory=dict)
    members: dict[int, float] = field(default_factory=dict)
    uncosted_groups: dict[int, int] = field(default_factory=dict)
    uncosted_members: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Caps:
    """Every group's cap and every member's (admins have none: TEAM-1), in dollars per UTC month."""

    groups: dict[int, float] = field(default_factory=dict)
    members: dict[int, float] = field(default_factory=dict)


def _month_of(rows: Sequence[tuple[int, int, float, int]], month: int) -> MonthSpend:
    spend = MonthSpend(month)
    for group_id, user_id, usd, uncosted in rows:
        amount = float(usd or 0.0)  # PostgreSQL may answer a Decimal for a NUMERIC sum
        spend.groups[group_id] = spend.groups.get(group_id, 0.0) + amount
        spend.members[user_id] = spend.members.get(user_id, 0.0) + amount
        if uncosted:
            spend.uncosted_groups[group_id] = spend.uncosted_groups.get(group_id, 0) + int(uncosted)
            spend.uncosted_members[user_id] = spend.uncosted_members.get(user_id, 0) + int(uncosted)
    return spend


def _read_month(connection: sa.Connection, month: int) -> MonthSpend:
    query = sa.select(_SPEND.c.group_id, _SPEND.c.user_id, _SPEND.c.usd, _SPEND.c.uncosted).where(
        _SPEND.c.month == month
    )
    return _month_of([tuple(row) for row in connection.execute(query)], month)


def _read_caps(connection: sa.Connection) -> Caps:
    caps = Caps()
    query = sa.select(_GROUPS.c.id, _GROUPS.c.metered_monthly_usd).where(
        _GROUPS.c.metered_monthly_usd.is_not(None)
    )
    for group_id, cap in connection.execute(query):
        caps.groups[int(group_id)] = float(cap)
    query = sa.select(_USERS.c.id, _USERS.c.metered_monthly_usd).where(
        _USERS.c.metered_monthly_usd.is_not(None), _USERS.c.role != ROLE_ADMIN
    )
    for user_id, cap in connection.execute(query):
        caps.members[int(user_id)] = float(cap)
    return caps


class SpendLedger:
    """This month's metered spend and the caps (PAID-3).

    The history writer calls :meth:`add` in its transaction and :meth:`committed` or
    :meth:`rolled_back` after it (``sublane_history.CostLedger``); selection asks :meth:`blocked`
    (the scheduler's ``MeteredSpend``); :meth:`start` runs the refresher thread, :meth:`close` stops
    it. ``is_metered(provider)``: whether that provider's accounts are paid per token.
    """

    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        book: PriceBook,
        is_metered: Callable[[str], bool],
        *,
        refresh_s: float = REFRESH_S,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._book = book
        self._is_metered = is_metered
        self._refresh_s = refresh_s
        self._bounds = month_bounds(clock.time())  # the current UTC month, worked out once a month
        self._spend = MonthSpend(self._bounds[0])
        self._caps = Caps()
        self._lock = threading.Lock()
        #: Each read of the database takes a ticket when it begins (the writer's: when it commits);
        #: a read is applied only over an older one, so older sums or caps never replace newer ones.
        self._tickets = 0
        self._spend_ticket = 0
        self._caps_ticket = 0
        self._staged: MonthSpend | None = None  # read in the writer's open transaction
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the history writer's transaction ---------------------------------------------------------

    def add(
        self,
        connection: sa.Connection,
        payloads: Sequence[signals.RequestFinished],
        costs: Sequence[float | None],
    ) -> None:
        """Add the metered attempts of a batch being written, in the caller's transaction, then read
        this month's sums in it (applied by :meth:`committed`)."""
        rows: dict[tuple[int, int, int], list[float | int]] = {}
        for payload, cost in zip(payloads, costs, strict=True):
            provider = payload.provider
            if payload.account_id is None or not provider or not self._is_metered(provider):
                continue
            if payload.operation in _FREE_OPERATIONS:
                continue  # counting tokens costs nothing and reports no usage: neither spend nor unknown
            if (
                cost is None
                and payload.outcome not in _SERVED
                and not (payload.input_tokens or payload.output_tokens)
            ):
                continue  # refused or failed with nothing used: no cost, nothing unknown
            month = month_bounds(float(payload.started_at))[0]
            group_id = NO_GROUP if payload.group_id is None else payload.group_id
            row = rows.setdefault((month, group_id, payload.user_id), [0.0, 0, 0])
            row[1] += 1
            if cost is None:
                row[2] += 1
            else:
                row[0] += cost
        if not rows:
            return
        values = [
            {"month": month, "group_id": group_id, "user_id": user_id, "usd": round(float(usd), 9),
             "calls": int(calls), "uncosted": int(uncosted)}
            for (month, group_id, user_id), (usd, calls, uncosted) in sorted(rows.items())
        ]  # fmt: skip
        # Sorted keys: two replicas' transactions lock shared rows in one order (no deadlock).
        connection.execute(_ADD, values)
        self._staged = _read_month(connection, self._month_bounds()[0])

    def committed(self) -> None:
        """The writer's transaction is committed: its sums become what :meth:`blocked` reads."""
        staged, self._staged = self._staged, None
        if staged is not None:
            with self._lock:
                self._tickets += 1  # as of the commit: a read begun before it did not see these rows
                self._spend, self._spend_ticket = staged, self._tickets

    def rolled_back(self) -> None:
        """The writer's transaction failed: what it read is forgotten."""
        self._staged = None

    # -- reading again ---------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read this month's sums and every cap from the database now (blocking)."""
        with self._lock:
            self._tickets += 1
            ticket = self._tickets
        month = self._month_bounds()[0]
        with self._engine.connect() as connection:
            spend = _read_month(connection, month)
            caps = _read_caps(connection)
        with self._lock:
            if ticket > self._caps_ticket:  # else a read begun later is already applied
                self._caps, self._caps_ticket = caps, ticket
            if ticket > self._spend_ticket:
                self._spend, self._spend_ticket = spend, ticket

    def start(self) -> None:
        """Read the sums and caps (blocking), then keep them fresh from a background thread."""
        self.refresh()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="sublane-metered-spend", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the refresher thread (blocking until it has)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join(10.0)

    def _run(self) -> None:
        background_thread_begins()
        while not self._stop.wait(self._refresh_s):
            try:
                self.refresh()
                self._book.keep_fresh()  # an admin's price set on another replica (unpriced_model)
            except sa.exc.SQLAlchemyError as exc:  # keep what is known; try again next time
                _log.warning("could not read the metered spend: %s", type(exc).__name__)

    # -- answers -------------------------------------------------------------------------------

    def blocked(self, group_id: int, user_id: int, model: str) -> tuple[str, float | None] | None:
        """Why metered accounts may not serve this caller now: ``("metered_budget_exhausted",
        reset_at)`` (the next UTC month's start) or ``("unpriced_model", None)``; ``None`` when they
        may. Memory only: cheap enough to ask during selection."""
        if self._book.prices(model, reload=False) is None:
            return (UNPRICED, None)
        caps = self._caps
        group_cap, member_cap = caps.groups.get(group_id), caps.members.get(user_id)
        if group_cap is None and member_cap is None:
            return None
        month, reset = self._month_bounds()
        spend = self._spend
        current = spend.month == month  # a new month has begun: nothing spent in it yet
        if group_cap is not None and (spend.groups.get(group_id, 0.0) if current else 0.0) >= group_cap:
            return (BUDGET_EXHAUSTED, float(reset))
        if member_cap is not None and (spend.members.get(user_id, 0.0) if current else 0.0) >= member_cap:
            return (BUDGET_EXHAUSTED, float(reset))
        return None

    def group_spent(self, group_id: int) -> float:
        """The group's metered spend this UTC month, from memory (at most :data:`REFRESH_S` old)."""
        spend = self._spend
        return round(spend.groups.get(group_id, 0.0), 9) if spend.month == self.month() else 0.0

    def member_spent(self, user_id: int) -> float:
        """The member's metered spend this UTC month (every group), from memory."""
        spend = self._spend
        return round(spend.members.get(user_id, 0.0), 9) if spend.month == self.month() else 0.0

    def uncosted(self, *, group_id: int | None = None, user_id: int | None = None) -> int:
        """Metered attempts this month whose cost is unknown, of the group or the member."""
        spend = self._spend
        if spend.month != self.month():
            return 0
        if group_id is not None:
            return spend.uncosted_groups.get(group_id, 0)
        return spend.uncosted_members.get(user_id or 0, 0)

    def month(self) -> int:
        """The current UTC month's start (Unix seconds)."""
        return self._month_bounds()[0]

    def reset_at(self) -> int:
        """When the current UTC month ends and the sums start again from 0 (Unix seconds)."""
        return self._month_bounds()[1]

    def _month_bounds(self) -> tuple[int, int]:
        now = self._clock.time()
        bounds = self._bounds
        if not bounds[0] <= now < bounds[1]:
            bounds = self._bounds = month_bounds(now)
        return bounds
