"""Token budgets (TEAM-4), enforced from usage totals held in memory: no database call per request.

At start-up :meth:`TokenBudgets.load` reads every rule and this UTC month's tokens from the usage
summaries. From then on :meth:`TokenBudgets.note` adds each finished attempt's input + output tokens
(the ``request_finished`` receiver, on the request path, before the attempt's slot is handed on),
and :meth:`TokenBudgets.check` compares them with the member's rules in O(rules). Totals are kept
for every member, whether or not they have rules, so a rule set later counts from the start of its
period: per member, per (group or any) × (model or any), for the current UTC day and month.

COST-5 adds rolling windows (``5h``, ``7d``: the span ending now) and rules in US dollars
(``unit: "usd"``, counting COST-2's cost). Rolling windows are counted from each attempt of the
members who have such rules (loaded from the request records of the last 7 days when their rules
are read or set, then added to as calls finish); a refusal's ``Retry-After`` is when enough of the
window's usage will have left it. A call's cost is asked of ``costs`` (the gateway's price book,
never the database) only for members who have dollar rules.

Nothing is reserved: a request that was admitted may finish over the limit; the next one is refused.
The totals count the exact model names; the summaries fold a member's models past the daily label
cap into "other", so after a restart a model-scoped rule does not see such tokens (a member who
calls more than 64 models in a day).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import NO_GROUP, Clock, SubLaneError, signals
from sublane_history._costs import RecordCosts
from sublane_history._tables import BUDGETS, RECORDS, USAGE_DAYS
from sublane_history._usage import DAY_S, reported_tokens, utc_day

MAX_RULES: Final = 64
MAX_LIMIT: Final = 10**12
RETRY_AFTER_CAP_S: Final = float(DAY_S)


class BudgetPeriod(StrEnum):
    """The period a budget counts: a UTC day or month, or a rolling span ending now (COST-5)."""

    DAY = "day"
    MONTH = "month"
    FIVE_HOURS = "5h"
    SEVEN_DAYS = "7d"

    @property
    def rolling_s(self) -> int | None:
        """The span of a rolling period in seconds; ``None`` for a calendar period."""
        return ROLLING_S.get(self.value)


# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_DAY, _MONTH = BudgetPeriod.DAY, BudgetPeriod.MONTH

ROLLING_S: Final = {"5h": 5 * 3600, "7d": 7 * DAY_S}
UNITS: Final = ("tokens", "usd")


def period_bounds(period: BudgetPeriod, moment: float) -> tuple[float, float]:
    """``(start, reset)`` in Unix seconds of the UTC ``period`` that holds ``moment`` (a rolling
    period: the span ending at ``moment``, and ``moment``)."""
    span = period.rolling_s
    if span is not None:
        return moment - span, moment
    if period is _DAY:
        start = utc_day(moment)
        return float(start), float(start + DAY_S)
    day = dt.datetime.fromtimestamp(moment, dt.UTC).date()
    first = dt.datetime(day.year, day.month, 1, tzinfo=dt.UTC)
    following = dt.datetime(day.year + day.month // 12, day.month % 12 + 1, 1, tzinfo=dt.UTC)
    return first.timestamp(), following.timestamp()


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetRule:
    """One rule: at most ``limit`` input + output tokens (``unit="usd"``: ``usd_limit`` dollars of
    COST-2's cost) per ``period``, in ``group_id`` (``None``: any group) and of ``model`` (``None``:
    any model)."""

    id: int
    group_id: int | None
    model: str | None
    period: BudgetPeriod
    limit: int
    enabled: bool = True
    unit: str = "tokens"
    usd_limit: float | None = None

    @property
    def threshold(self) -> float:
        """What the rule allows, in its unit."""
        return (self.usd_limit or 0.0) if self.unit == "usd" else float(self.limit)


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetState:
    """A rule with what its period has used so far and when the period resets."""

    rule: BudgetRule
    used: int | float  # tokens, or dollars for a ``usd`` rule
    resets_at: float  # a rolling rule: when enough usage will have left the window to allow a call

    @property
    def exceeded(self) -> bool:
        """Whether the rule refuses new requests now (only enabled rules do)."""
        return self.rule.enabled and self.used >= self.rule.threshold


#: One attempt of a member with rolling rules: started, group, model, tokens, cost (``None``: unpriced).
_Event = tuple[float, int | None, str, int, float | None]


_Key = tuple[int, int | None, str | None]


class _Window:
    """Tokens per member × (group | any) × (model | any) in one UTC day or month."""

    __slots__ = ("costs", "period", "reset", "start", "totals")

    def __init__(self, period: BudgetPeriod, moment: float) -> None:
        self.period = period
        self.start, self.reset = period_bounds(period, moment)
        self.totals: dict[_Key, int] = {}
        self.costs: dict[_Key, float] = {}  # COST-5: dollars, for the members who have dollar rules

    def add(
        self, user_id: int, group_id: int | None, model: str, tokens: int, cost: float | None = None
    ) -> None:
        self.add_to(_keys(user_id, group_id, model), tokens, cost)

    def add_to(self, keys: tuple[_Key, ...], tokens: int, cost: float | None = None) -> None:
        totals = self.totals
        for key in keys:
            totals[key] = totals.get(key, 0) + tokens
        if cost:
            costs = self.costs
            for key in keys:
                costs[key] = costs.get(key, 0.0) + cost


def _keys(user_id: int, group_id: int | None, model: str) -> tuple[_Key, ...]:
    """The totals one attempt counts in: the member's, per model, and the same within its group."""
    if group_id is None:
        return ((user_id, None, None), (user_id, None, model))
    return (
        (user_id, None, None),
        (user_id, None, model),
        (user_id, group_id, None),
        (user_id, group_id, model),
    )


class TokenBudgets:
    """Every member's rules and this period's usage; :meth:`check` refuses what a rule forbids."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        now = clock.time()
        self._day = _Window(_DAY, now)
        self._month = _Window(_MONTH, now)
        self._rules: dict[int, tuple[BudgetRule, ...]] = {}
        self._lock = threading.Lock()  # rule sets are replaced from management worker threads
        #: COST-5: the attempts of the last 7 days of members who have rolling rules, oldest first;
        #: the members who have dollar rules (their calls are priced as they finish).
        self._events: dict[int, deque[_Event]] = {}
        self._priced: frozenset[int] = frozenset()
        self._engine: Engine | None = None
        #: COST-5: a finished attempt's cost, from memory only (the gateway's price book).
        self.costs: RecordCosts | None = None
        #: With replicas (SCALE-2): told the tokens (and cost) of each attempt of a member who has
        #: rules (``user, group, model, started_at, tokens, cost``) and each member whose rules were
        #: set here.
        self.on_noted: Callable[[int, int | None, str, float, int, float | None], None] | None = None
        self.on_rules_set: Callable[[int], None] | None = None

    # -- start-up --------------------------------------------------------------------------------

    def load(self, engine: Engine, user_id: int | None = None) -> None:
        """Read every rule, and this UTC month's tokens from the usage summaries (blocking).

        With ``user_id``, that member's only (another replica set their rules, SCALE-2: their
        tokens counted there were told only while they had rules)."""
        self._engine = engine
        now = self._clock.time()
        day, month = _Window(_DAY, now), _Window(_MONTH, now)
        rules: dict[int, list[BudgetRule]] = {}
        events: dict[int, deque[_Event]] = {}
        with engine.connect() as connection:
            selected = sa.select(BUDGETS).order_by(BUDGETS.c.id)
            if user_id is not None:
                selected = selected.where(BUDGETS.c.user_id == user_id)
            for row in connection.execute(selected).mappings():
                rules.setdefault(row["user_id"], []).append(rule_of(row))
            used = (
                sa.func.coalesce(sa.func.sum(USAGE_DAYS.c.input_tokens), 0)
                + sa.func.coalesce(sa.func.sum(USAGE_DAYS.c.output_tokens), 0)
            ).label("tokens")
            spent = sa.func.sum(USAGE_DAYS.c.cost_usd).label("cost")
            query = (
                sa.select(
                    USAGE_DAYS.c.day,
                    USAGE_DAYS.c.user_id,
                    USAGE_DAYS.c.group_id,
                    USAGE_DAYS.c.model,
                    used,
                    spent,
                )
                .where(
                    USAGE_DAYS.c.day >= int(month.start),
                    *([] if user_id is None else [USAGE_DAYS.c.user_id == user_id]),
                )
                .group_by(USAGE_DAYS.c.day, USAGE_DAYS.c.user_id, USAGE_DAYS.c.group_id, USAGE_DAYS.c.model)
            )
            for bucket_day, member, group_id, model, tokens, cost in connection.execute(query):
                if not tokens and not cost:
                    continue
                group = None if group_id == NO_GROUP else group_id
                month.add(member, group, model, int(tokens), cost)
                if bucket_day >= day.start:
                    day.add(member, group, model, int(tokens), cost)
            rolling = [user for user, found in rules.items() if any(rule.period.rolling_s for rule in found)]
            if rolling:
                events = _recent_events(connection, rolling, now)
        with self._lock:
            if user_id is None:
                self._day, self._month = day, month
                self._rules = {user: tuple(found) for user, found in rules.items()}
                self._events = events
                self._priced = _priced(self._rules)
                return
            self._rules.pop(user_id, None)
            self._rules.update((user, tuple(found)) for user, found in rules.items())
            self._events.pop(user_id, None)
            self._events.update(events)
            self._priced = _priced(self._rules)
        for mine, read in ((self._day, day), (self._month, month)):
            if mine.start == read.start:  # the member's totals as stored replace what was counted
                for key in [key for key in mine.totals if key[0] == user_id]:
                    del mine.totals[key]
                for key in [key for key in mine.costs if key[0] == user_id]:
                    del mine.costs[key]
                mine.totals.update(read.totals)
                mine.costs.update(read.costs)

    # -- the request path ------------------------------------------------------------------------

    def note(self, payload: signals.RequestFinished) -> None:
        """Count a finished attempt's input + output tokens (the ``request_finished`` receiver)."""
        tokens = reported_tokens(payload)
        if not tokens:
            return
        user_id = payload.user_id
        cost = None
        if user_id in self._priced and self.costs is not None:  # COST-5: only members with dollar rules
            cost = self.costs.cost_usd(payload)
        started = float(payload.started_at)
        self.add(user_id, payload.group_id, payload.model[:128], started, tokens, cost)
        if self.on_noted is not None and user_id in self._rules:
            self.on_noted(user_id, payload.group_id, payload.model[:128], started, tokens, cost)

    def add(
        self,
        user_id: int,
        group_id: int | None,
        model: str,
        started: float,
        tokens: int,
        cost: float | None = None,
    ) -> None:
        """Count ``tokens`` (and ``cost``) of an attempt begun at ``started`` (here, or told by
        another replica)."""
        now = self._clock.time()
        self._roll(now)
        keys = _keys(user_id, group_id, model)
        for window in (self._day, self._month):
            if started >= window.start:  # an attempt begun in the last period counts there
                window.add_to(keys, tokens, cost)
        events = self._events.get(user_id)
        if events is not None:
            events.append((started, group_id, model, tokens, cost))
            horizon = now - ROLLING_S["7d"]
            while events and events[0][0] < horizon:
                events.popleft()

    def check(self, user_id: int, group_id: int, model: str) -> None:
        """Refuse with 429 ``token_budget_exceeded`` when an enabled rule of ``user_id`` that covers
        ``group_id`` and ``model`` has used its limit; otherwise return at once."""
        rules = self._rules.get(user_id)
        if not rules:
            return
        now = self._clock.time()
        self._roll(now)
        blocking: BudgetState | None = None
        for rule in rules:
            if not rule.enabled:
                continue
            if (rule.group_id is not None and rule.group_id != group_id) or (
                rule.model is not None and rule.model != model
            ):
                continue
            span = ROLLING_S.get(rule.period)
            if span is None:  # a calendar period: compared without building its state
                window = self._day if rule.period is _DAY else self._month
                key = (user_id, rule.group_id, rule.model)
                if rule.unit == "usd":
                    if window.costs.get(key, 0.0) < (rule.usd_limit or 0.0):
                        continue
                elif window.totals.get(key, 0) < rule.limit:
                    continue
                state = self._state(user_id, rule, now)
            else:
                state = self._rolling_state(user_id, rule, span, now)
                if not state.exceeded:
                    continue
            if blocking is None or state.resets_at > blocking.resets_at:
                blocking = state  # the rule that refuses longest decides
        if blocking is not None:
            raise budget_error(blocking, now)

    # -- management ------------------------------------------------------------------------------

    def set_rules(self, user_id: int, rules: Iterable[BudgetRule]) -> None:
        """Replace ``user_id``'s rules (after the new set is committed)."""
        found = tuple(rules)
        engine = self._engine
        if engine is not None and any(rule.period.rolling_s or rule.unit == "usd" for rule in found):
            self.load(engine, user_id)  # COST-5: the stored rules, and the usage they count from
        else:
            with self._lock:
                if found:
                    self._rules[user_id] = found
                else:
                    self._rules.pop(user_id, None)
                self._events.pop(user_id, None)
                self._priced = _priced(self._rules)
        if self.on_rules_set is not None:
            self.on_rules_set(user_id)

    def rules(self, user_id: int) -> tuple[BudgetRule, ...]:
        """``user_id``'s rules in ID order."""
        return self._rules.get(user_id, ())

    def states(self, user_id: int) -> list[BudgetState]:
        """Each of ``user_id``'s rules with its usage in the current period (from any thread)."""
        now = self._clock.time()
        return [self._state(user_id, rule, now) for rule in self.rules(user_id)]

    # -- internals -------------------------------------------------------------------------------

    def _state(self, user_id: int, rule: BudgetRule, now: float) -> BudgetState:
        span = rule.period.rolling_s
        if span is not None:
            return self._rolling_state(user_id, rule, span, now)
        window = self._day if rule.period is _DAY else self._month
        if now >= window.reset:  # the period turned and no request has rolled the window yet
            return BudgetState(rule=rule, used=0, resets_at=period_bounds(rule.period, now)[1])
        key = (user_id, rule.group_id, rule.model)
        used: int | float = (
            round(window.costs.get(key, 0.0), 9) if rule.unit == "usd" else window.totals.get(key, 0)
        )
        return BudgetState(rule=rule, used=used, resets_at=window.reset)

    def _rolling_state(self, user_id: int, rule: BudgetRule, span: int, now: float) -> BudgetState:
        """COST-5: the usage of the ``span`` ending now; over the limit, ``resets_at`` is when enough
        of it will have left the window for the next call to be allowed."""
        start = now - span
        usd = rule.unit == "usd"
        amounts: list[tuple[float, float]] = []
        for started, group_id, model, tokens, cost in sorted(self._events.get(user_id, ())):
            if started < start or started > now:
                continue
            if (rule.group_id is not None and group_id != rule.group_id) or (
                rule.model is not None and model != rule.model
            ):
                continue
            amount = (cost or 0.0) if usd else float(tokens)
            if amount:
                amounts.append((started, amount))
        used = sum(amount for _, amount in amounts)
        resets_at = now
        if rule.enabled and used >= rule.threshold:
            left = used
            for started, amount in amounts:
                left -= amount
                resets_at = started + span
                if left < rule.threshold:
                    break
        return BudgetState(rule=rule, used=round(used, 9) if usd else int(used), resets_at=resets_at)

    def _roll(self, now: float) -> None:
        """Start a new day or month window when the UTC period has turned (event loop only: the
        request path is the only writer of the totals)."""
        if now >= self._day.reset:
            self._day = _Window(_DAY, now)
        if now >= self._month.reset:
            self._month = _Window(_MONTH, now)


def rule_of(row: Mapping[Any, Any]) -> BudgetRule:
    """The :class:`BudgetRule` of a ``token_budgets`` row."""
    group_id = row["group_id"]
    model = row["model"]
    rule_id, limit = row["id"], row["token_limit"]
    assert isinstance(rule_id, int) and isinstance(limit, int)
    return BudgetRule(
        id=rule_id,
        group_id=group_id if isinstance(group_id, int) else None,
        model=model if isinstance(model, str) else None,
        period=BudgetPeriod(str(row["period"])),
        limit=limit,
        enabled=bool(row["enabled"]),
        unit=str(row.get("unit") or "tokens"),
        usd_limit=float(row["usd_limit"]) if row.get("usd_limit") is not None else None,
    )


def _priced(rules: Mapping[int, tuple[BudgetRule, ...]]) -> frozenset[int]:
    """The members who have a dollar rule: their calls are priced as they finish."""
    return frozenset(user for user, found in rules.items() if any(rule.unit == "usd" for rule in found))


def _recent_events(connection: sa.Connection, users: list[int], now: float) -> dict[int, deque[_Event]]:
    """The attempts of the last 7 days of ``users`` from the request records, oldest first."""
    events: dict[int, deque[_Event]] = {user: deque() for user in users}
    query = (
        sa.select(
            RECORDS.c.user_id,
            RECORDS.c.started_at,
            RECORDS.c.group_id,
            RECORDS.c.model,
            RECORDS.c.input_tokens,
            RECORDS.c.output_tokens,
            RECORDS.c.cost_usd,
        )
        .where(RECORDS.c.user_id.in_(users), RECORDS.c.started_at >= now - ROLLING_S["7d"])
        .order_by(RECORDS.c.started_at)
    )
    for user, started, group_id, model, tokens_in, tokens_out, cost in connection.execute(query):
        events[user].append((float(started), group_id, model, (tokens_in or 0) + (tokens_out or 0), cost))
    return events


def _dollars(amount: float) -> str:
    """``amount`` as the admin set it: cents from a cent up, else its significant digits (a
    $0.0001 limit is not "$0.00")."""
    return f"${amount:,.2f}" if amount >= 0.01 else f"${amount:.6g}"


def budget_error(state: BudgetState, now: float) -> SubLaneError:
    """429 ``token_budget_exceeded`` for ``state``: ``Retry-After`` until the reset (at most a day),
    ``X-Token-Budget-Id`` and ``X-Token-Budget-Reset`` (Unix seconds)."""
    rule = state.rule
    reset = dt.datetime.fromtimestamp(state.resets_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    scope = f" for {rule.model}" if rule.model is not None else ""
    amount = _dollars(rule.threshold) if rule.unit == "usd" else f"{rule.limit:,} tokens"
    span = {"5h": "5 hours", "7d": "7 days"}.get(rule.period.value, rule.period.value)
    again = "a call is allowed again" if rule.period.rolling_s else "it resets"
    message = (
        f"Your token budget of {amount} per {span}{scope} is used up (rule {rule.id}); {again} at {reset}."
    )
    return SubLaneError(
        "token_budget_exceeded",
        message,
        retry_after=max(1.0, min(RETRY_AFTER_CAP_S, state.resets_at - now)),
        headers={"X-Token-Budget-Id": str(rule.id), "X-Token-Budget-Reset": str(int(state.resets_at))},
    )
