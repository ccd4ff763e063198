"""Token budgets (TEAM-4), enforced from usage totals held in memory: no database call per request.

At start-up :meth:`TokenBudgets.load` reads every rule and this UTC month's tokens from the usage
summaries. From then on :meth:`TokenBudgets.note` adds each finished attempt's input + output tokens
(the ``request_finished`` receiver, on the request path, before the attempt's slot is handed on),
and :meth:`TokenBudgets.check` compares them with the member's rules in O(rules). Totals are kept
for every member, whether or not they have rules, so a rule set later counts from the start of its
period: per member, per (group or any) × (model or any), for the current UTC day and month.

Nothing is reserved: a request that was admitted may finish over the limit; the next one is refused.
The totals count the exact model names; the summaries fold a member's models past the daily label
cap into "other", so after a restart a model-scoped rule does not see such tokens (a member who
calls more than 64 models in a day).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import NO_GROUP, Clock, SubLaneError, signals
from sublane_history._tables import BUDGETS, USAGE_DAYS
from sublane_history._usage import DAY_S, reported_tokens, utc_day

MAX_RULES: Final = 64
MAX_LIMIT: Final = 10**12
RETRY_AFTER_CAP_S: Final = float(DAY_S)


class BudgetPeriod(StrEnum):
    """The UTC period a budget counts."""

    DAY = "day"
    MONTH = "month"


def period_bounds(period: BudgetPeriod, moment: float) -> tuple[float, float]:
    """``(start, reset)`` in Unix seconds of the UTC ``period`` that holds ``moment``."""
    if period is BudgetPeriod.DAY:
        start = utc_day(moment)
        return float(start), float(start + DAY_S)
    day = dt.datetime.fromtimestamp(moment, dt.UTC).date()
    first = dt.datetime(day.year, day.month, 1, tzinfo=dt.UTC)
    following = dt.datetime(day.year + day.month // 12, day.month % 12 + 1, 1, tzinfo=dt.UTC)
    return first.timestamp(), following.timestamp()


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetRule:
    """One rule: at most ``limit`` input + output tokens per ``period``, in ``group_id`` (``None``:
    any group) and of ``model`` (``None``: any model)."""

    id: int
    group_id: int | None
    model: str | None
    period: BudgetPeriod
    limit: int
    enabled: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetState:
    """A rule with what its period has used so far and when the period resets."""

    rule: BudgetRule
    used: int
    resets_at: float

    @property
    def exceeded(self) -> bool:
        """Whether the rule refuses new requests now (only enabled rules do)."""
        return self.rule.enabled and self.used >= self.rule.limit


_Key = tuple[int, int | None, str | None]


class _Window:
    """Tokens per member × (group | any) × (model | any) in one UTC day or month."""

    __slots__ = ("period", "reset", "start", "totals")

    def __init__(self, period: BudgetPeriod, moment: float) -> None:
        self.period = period
        self.start, self.reset = period_bounds(period, moment)
        self.totals: dict[_Key, int] = {}

    def add(self, user_id: int, group_id: int | None, model: str, tokens: int) -> None:
        self.add_to(_keys(user_id, group_id, model), tokens)

    def add_to(self, keys: tuple[_Key, ...], tokens: int) -> None:
        totals = self.totals
        for key in keys:
            totals[key] = totals.get(key, 0) + tokens


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
        self._day = _Window(BudgetPeriod.DAY, now)
        self._month = _Window(BudgetPeriod.MONTH, now)
        self._rules: dict[int, tuple[BudgetRule, ...]] = {}
        self._lock = threading.Lock()  # rule sets are replaced from management worker threads
        #: With replicas (SCALE-2): told the tokens of each attempt of a member who has rules
        #: (``user, group, model, started_at, tokens``) and each member whose rules were set here.
        self.on_noted: Callable[[int, int | None, str, float, int], None] | None = None
        self.on_rules_set: Callable[[int], None] | None = None

    # -- start-up --------------------------------------------------------------------------------

    def load(self, engine: Engine, user_id: int | None = None) -> None:
        """Read every rule, and this UTC month's tokens from the usage summaries (blocking).

        With ``user_id``, that member's only (another replica set their rules, SCALE-2: their
        tokens counted there were told only while they had rules)."""
        now = self._clock.time()
        day, month = _Window(BudgetPeriod.DAY, now), _Window(BudgetPeriod.MONTH, now)
        rules: dict[int, list[BudgetRule]] = {}
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
            query = (
                sa.select(
                    USAGE_DAYS.c.day, USAGE_DAYS.c.user_id, USAGE_DAYS.c.group_id, USAGE_DAYS.c.model, used
                )
                .where(
                    USAGE_DAYS.c.day >= int(month.start),
                    *([] if user_id is None else [USAGE_DAYS.c.user_id == user_id]),
                )
                .group_by(USAGE_DAYS.c.day, USAGE_DAYS.c.user_id, USAGE_DAYS.c.group_id, USAGE_DAYS.c.model)
            )
            for bucket_day, member, group_id, model, tokens in connection.execute(query):
                if not tokens:
                    continue
                group = None if group_id == NO_GROUP else group_id
                month.add(member, group, model, int(tokens))
                if bucket_day >= day.start:
                    day.add(member, group, model, int(tokens))
        with self._lock:
            if user_id is None:
                self._day, self._month = day, month
                self._rules = {user: tuple(found) for user, found in rules.items()}
                return
            self._rules.pop(user_id, None)
            self._rules.update((user, tuple(found)) for user, found in rules.items())
        for mine, read in ((self._day, day), (self._month, month)):
            if mine.start == read.start:  # the member's totals as stored replace what was counted
                for key in [key for key in mine.totals if key[0] == user_id]:
                    del mine.totals[key]
                mine.totals.update(read.totals)

    # -- the request path ------------------------------------------------------------------------

    def note(self, payload: signals.RequestFinished) -> None:
        """Count a finished attempt's input + output tokens (the ``request_finished`` receiver)."""
        tokens = reported_tokens(payload)
        if not tokens:
            return
        started = float(payload.started_at)
        self.add(payload.user_id, payload.group_id, payload.model[:128], started, tokens)
        if self.on_noted is not None and payload.user_id in self._rules:
            self.on_noted(payload.user_id, payload.group_id, payload.model[:128], started, tokens)

    def add(self, user_id: int, group_id: int | None, model: str, started: float, tokens: int) -> None:
        """Count ``tokens`` of an attempt begun at ``started`` (here, or told by another replica)."""
        self._roll(self._clock.time())
        keys = _keys(user_id, group_id, model)
        for window in (self._day, self._month):
            if started >= window.start:  # an attempt begun in the last period counts there
                window.add_to(keys, tokens)

    def check(self, user_id: int, group_id: int, model: str) -> None:
        """Refuse with 429 ``token_budget_exceeded`` when an enabled rule of ``user_id`` that covers
        ``group_id`` and ``model`` has used its limit; otherwise return at once."""
        rules = self._rules.get(user_id)
        if not rules:
            return
        now = self._clock.time()
        self._roll(now)
        blocking: BudgetRule | None = None
        for rule in rules:
            if not rule.enabled:
                continue
            if (rule.group_id is not None and rule.group_id != group_id) or (
                rule.model is not None and rule.model != model
            ):
                continue
            window = self._day if rule.period is BudgetPeriod.DAY else self._month
            if window.totals.get((user_id, rule.group_id, rule.model), 0) < rule.limit:
                continue
            if blocking is None or (
                rule.period is BudgetPeriod.MONTH and blocking.period is BudgetPeriod.DAY
            ):
                blocking = rule  # the rule that refuses longest (a month outlasts a day) decides
        if blocking is not None:
            raise budget_error(self._state(user_id, blocking, now), now)

    # -- management ------------------------------------------------------------------------------

    def set_rules(self, user_id: int, rules: Iterable[BudgetRule]) -> None:
        """Replace ``user_id``'s rules (after the new set is committed)."""
        found = tuple(rules)
        with self._lock:
            if found:
                self._rules[user_id] = found
            else:
                self._rules.pop(user_id, None)
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
        window = self._day if rule.period is BudgetPeriod.DAY else self._month
        if now >= window.reset:  # the period turned and no request has rolled the window yet
            return BudgetState(rule=rule, used=0, resets_at=period_bounds(rule.period, now)[1])
        used = window.totals.get((user_id, rule.group_id, rule.model), 0)
        return BudgetState(rule=rule, used=used, resets_at=window.reset)

    def _roll(self, now: float) -> None:
        """Start a new day or month window when the UTC period has turned (event loop only: the
        request path is the only writer of the totals)."""
        if now >= self._day.reset:
            self._day = _Window(BudgetPeriod.DAY, now)
        if now >= self._month.reset:
            self._month = _Window(BudgetPeriod.MONTH, now)


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
    )


def budget_error(state: BudgetState, now: float) -> SubLaneError:
    """429 ``token_budget_exceeded`` for ``state``: ``Retry-After`` until the reset (at most a day),
    ``X-Token-Budget-Id`` and ``X-Token-Budget-Reset`` (Unix seconds)."""
    rule = state.rule
    reset = dt.datetime.fromtimestamp(state.resets_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    scope = f" for {rule.model}" if rule.model is not None else ""
    message = (
        f"Your token budget of {rule.limit:,} tokens per {rule.period.value}{scope} is used up "
        f"(rule {rule.id}); it resets at {reset}."
    )
    return SubLaneError(
        "token_budget_exceeded",
        message,
        retry_after=max(1.0, min(RETRY_AFTER_CAP_S, state.resets_at - now)),
        headers={"X-Token-Budget-Id": str(rule.id), "X-Token-Budget-Reset": str(int(state.resets_at))},
    )
