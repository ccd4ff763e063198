"""Token budgets (TEAM-4): in-memory usage totals, UTC periods, the refusal and its headers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from history_harness import HistoryDb
from sqlmodel import Session

from sublane_core import SubLaneError, TokenBudget, signals
from sublane_history import (
    BudgetPeriod,
    BudgetRule,
    HistoryRecorder,
    TokenBudgets,
    UsageWriter,
    period_bounds,
)

Payload = Callable[..., signals.RequestFinished]
DAY = 86_400


def _at(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> float:
    return dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC).timestamp()


def _rule(rule_id: int = 1, **fields: object) -> BudgetRule:
    values: dict[str, object] = {"group_id": None, "model": None, "period": BudgetPeriod.DAY, "limit": 1000}
    values.update(fields)
    return BudgetRule(id=rule_id, **values)  # type: ignore[arg-type]


def _refusal(
    budgets: TokenBudgets, user_id: int = 2, group_id: int = 1, model: str = "gpt-5-codex"
) -> SubLaneError:
    with pytest.raises(SubLaneError) as refused:
        budgets.check(user_id, group_id, model)
    return refused.value


def test_team_4_periods_are_utc_days_and_months() -> None:
    assert period_bounds(BudgetPeriod.DAY, _at(2027, 1, 15, 8)) == (_at(2027, 1, 15), _at(2027, 1, 16))
    assert period_bounds(BudgetPeriod.MONTH, _at(2027, 1, 31, 23, 59)) == (_at(2027, 1, 1), _at(2027, 2, 1))
    assert period_bounds(BudgetPeriod.MONTH, _at(2027, 12, 31, 12)) == (_at(2027, 12, 1), _at(2028, 1, 1))
    assert period_bounds(BudgetPeriod.MONTH, _at(2028, 2, 29, 1)) == (_at(2028, 2, 1), _at(2028, 3, 1))
    assert period_bounds(BudgetPeriod.DAY, _at(2028, 1, 1)) == (_at(2028, 1, 1), _at(2028, 1, 2))


def test_team_4_a_rule_refuses_once_its_limit_is_used(history_db: HistoryDb, make_payload: Payload) -> None:
    clock = history_db.clock  # 2027-01-15 08:00 UTC
    budgets = TokenBudgets(clock)
    budgets.set_rules(2, [_rule(7, limit=2000)])
    budgets.check(2, 1, "gpt-5-codex")  # nothing used yet
    budgets.note(make_payload(input_tokens=1000, output_tokens=50))  # cached tokens are not added again
    budgets.check(2, 1, "gpt-5-codex")
    budgets.note(make_payload(input_tokens=900, output_tokens=50))  # 2000: the limit is used
    refused = _refusal(budgets)
    assert (refused.code, refused.status) == ("token_budget_exceeded", 429)
    assert refused.retry_after == pytest.approx(16 * 3600)  # until 2027-01-16 00:00 UTC
    assert refused.headers == {"x-token-budget-id": "7", "x-token-budget-reset": str(int(_at(2027, 1, 16)))}
    assert "2,000 tokens per day" in refused.message
    budgets.check(3, 1, "gpt-5-codex")  # another member is not affected
    [state] = budgets.states(2)
    assert (state.used, state.exceeded, state.resets_at) == (2000, True, _at(2027, 1, 16))
    clock.advance(16 * 3600)  # UTC midnight: a new day
    budgets.check(2, 1, "gpt-5-codex")
    assert budgets.states(2)[0].used == 0


def test_team_4_rules_scope_by_group_and_model(history_db: HistoryDb, make_payload: Payload) -> None:
    budgets = TokenBudgets(history_db.clock)
    budgets.set_rules(
        2,
        [
            _rule(1, group_id=1, limit=100),
            _rule(2, model="gpt-5", limit=100),
            _rule(3, group_id=9, model="gpt-5", limit=100, enabled=False),
        ],
    )
    budgets.note(make_payload(group_id=1, model="gpt-5-codex", input_tokens=100, output_tokens=0))
    assert _refusal(budgets, group_id=1, model="gpt-5-codex").headers["x-token-budget-id"] == "1"
    budgets.check(2, 5, "gpt-5-codex")  # rule 1 is for group 1 only
    budgets.check(2, 5, "gpt-5")  # rule 2 counts gpt-5 only: nothing yet
    budgets.note(make_payload(group_id=5, model="gpt-5", input_tokens=60, output_tokens=40))
    assert _refusal(budgets, group_id=5, model="gpt-5").headers["x-token-budget-id"] == "2"
    budgets.check(2, 9, "gpt-5-codex")  # the disabled rule refuses nothing
    used = {state.rule.id: (state.used, state.exceeded) for state in budgets.states(2)}
    assert used == {1: (100, True), 2: (100, True), 3: (0, False)}


def test_team_4_the_rule_that_refuses_longest_decides_and_retry_after_is_at_most_a_day(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    clock = history_db.clock
    budgets = TokenBudgets(clock)
    budgets.set_rules(2, [_rule(1, limit=10), _rule(2, period=BudgetPeriod.MONTH, limit=10)])
    budgets.note(make_payload(input_tokens=10, output_tokens=0))
    refused = _refusal(budgets)
    assert refused.headers == {"x-token-budget-id": "2", "x-token-budget-reset": str(int(_at(2027, 2, 1)))}
    assert refused.retry_after == DAY  # the month resets in 16.7 days: capped at one day
    clock.advance(_at(2027, 1, 31, 23, 59) - clock.time())
    assert _refusal(budgets).retry_after == pytest.approx(60)  # the month's last minute
    clock.advance(60)  # 2027-02-01 00:00 UTC: both periods turned
    budgets.check(2, 1, "gpt-5-codex")


def test_team_4_an_attempt_counts_in_the_period_it_began(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    clock = history_db.clock
    budgets = TokenBudgets(clock)
    budgets.set_rules(2, [_rule(1, limit=100), _rule(2, period=BudgetPeriod.MONTH, limit=10**6)])
    clock.advance(_at(2027, 1, 16, 0, 0) + 5 - clock.time())
    budgets.note(make_payload(started_at=_at(2027, 1, 15, 23, 59), input_tokens=500, output_tokens=0))
    budgets.check(2, 1, "gpt-5-codex")  # begun yesterday: not today's
    assert {state.rule.id: state.used for state in budgets.states(2)} == {1: 0, 2: 500}


def test_team_4_unknown_usage_adds_nothing(history_db: HistoryDb, make_payload: Payload) -> None:
    budgets = TokenBudgets(history_db.clock)
    budgets.set_rules(2, [_rule(1, limit=1)])
    budgets.note(make_payload(input_tokens=None, output_tokens=None))
    budgets.note(make_payload(account_id=None, input_tokens=None, output_tokens=None, outcome="rejected"))
    budgets.check(2, 1, "gpt-5-codex")
    budgets.note(make_payload(input_tokens=None, output_tokens=3))  # what is known counts
    assert _refusal(budgets).code == "token_budget_exceeded"


def test_team_4_usage_is_loaded_from_the_summaries_at_start(
    history_db: HistoryDb, make_payload: Payload
) -> None:
    clock = history_db.clock
    recorder = HistoryRecorder(history_db.engine, clock, usage=UsageWriter())
    recorder.write(
        [
            make_payload(started_at=_at(2027, 1, 2, 10), input_tokens=300, output_tokens=0),  # this month
            make_payload(started_at=_at(2026, 12, 31, 10), input_tokens=10**6, output_tokens=0),  # last month
            make_payload(input_tokens=40, output_tokens=2),  # today
            make_payload(group_id=2, model="gpt-5", input_tokens=5, output_tokens=5),
            make_payload(user_id=3, key_id=3, input_tokens=7, output_tokens=0),
        ]
    )
    now = clock.time()
    with Session(history_db.engine) as db:
        for period, limit, model in (("day", 100, None), ("month", 400, None), ("month", 9, "gpt-5")):
            db.add(
                TokenBudget(
                    user_id=2, period=period, token_limit=limit, model=model, created_at=now, updated_at=now
                )
            )
        db.commit()
    budgets = TokenBudgets(clock)
    budgets.load(history_db.engine)
    used = [(state.rule.period, state.rule.model, state.used) for state in budgets.states(2)]
    assert used == [("day", None, 52), ("month", None, 352), ("month", "gpt-5", 10)]
    assert _refusal(budgets, group_id=2, model="gpt-5").headers["x-token-budget-id"] == "3"
    budgets.check(2, 1, "gpt-5-codex")  # 52 of 100 today, 352 of 400 this month
    assert budgets.rules(3) == ()
