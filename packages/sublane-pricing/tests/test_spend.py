"""PAID-3: the metered spend ledger on a real, migrated SQLite file: sums per UTC month, group and
member, the caps' answers, a restart, and two writers on one database."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import FakeClock, Outcome, create_db_engine, signals, upgrade_database
from sublane_pricing import GenaiPrices, PriceBook, SpendLedger, month_bounds

METERED = "meter"  # a provider name the tests declare metered
NOV_30_LATE = dt.datetime(2026, 11, 30, 23, 59, 30, tzinfo=dt.UTC).timestamp()
DEC_1 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp()
JAN_1 = dt.datetime(2027, 1, 1, tzinfo=dt.UTC).timestamp()


def _attempt(
    started: float,
    *,
    user: int = 2,
    group: int = 1,
    provider: str = METERED,
    outcome: Outcome = Outcome.SUCCESS,
    tokens: int | None = 100,
    operation: str = "json",
) -> signals.RequestFinished:
    return signals.RequestFinished(
        request_id="r",
        started_at=started,
        duration_ms=10,
        first_token_ms=None,
        user_id=user,
        key_id=None,
        group_id=group,
        account_id=7,
        provider=provider,
        model="gpt-5.5",
        protocol="responses",
        operation=operation,
        outcome=outcome,
        input_tokens=tokens,
        output_tokens=tokens,
    )


def _engine(tmp_path: Path) -> Engine:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'sublane.db'}")
    upgrade_database(engine)
    with engine.begin() as connection:
        for user, role in ((2, "member"), (3, "member"), (4, "admin")):
            connection.execute(
                sa.text(
                    "INSERT INTO users (id, username, password_hash, role, enabled,"
                    " member_concurrency, rpm, created_at, updated_at, totp_enabled)"
                    " VALUES (:id, :name, 'x', :role, 1, 10, 0, 0, 0, 0)"
                ),
                {"id": user, "name": f"u{user}", "role": role},
            )
        connection.execute(
            sa.text("INSERT INTO resource_groups (id, name, created_at, updated_at) VALUES (1, 'g', 0, 0)")
        )
    return engine


def _ledger(engine: Engine, clock: FakeClock) -> SpendLedger:
    return SpendLedger(engine, clock, PriceBook(engine, clock, GenaiPrices()), lambda p: p == METERED)


def _write(
    engine: Engine, ledger: SpendLedger, batch: list[tuple[signals.RequestFinished, float | None]]
) -> None:
    """What the history writer does: add in the records' transaction, then tell it was committed."""
    with engine.begin() as connection:
        ledger.add(connection, [payload for payload, _ in batch], [cost for _, cost in batch])
    ledger.committed()


def _caps(engine: Engine, *, group: float | None = None, **members: float | None) -> None:
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE resource_groups SET metered_monthly_usd = :cap"), {"cap": group})
        for name, cap in members.items():
            connection.execute(
                sa.text("UPDATE users SET metered_monthly_usd = :cap WHERE username = :name"),
                {"cap": cap, "name": name},
            )


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return _engine(tmp_path)


def test_paid_3_month_bounds_are_utc_months() -> None:
    assert month_bounds(NOV_30_LATE) == (int(dt.datetime(2026, 11, 1, tzinfo=dt.UTC).timestamp()), int(DEC_1))
    assert month_bounds(DEC_1) == (int(DEC_1), int(JAN_1))


def test_paid_3_ledger_sums_metered_cost_per_month_group_and_member(engine: Engine) -> None:
    clock = FakeClock(wall=DEC_1 + 60)
    ledger = _ledger(engine, clock)
    _write(
        engine,
        ledger,
        [
            (_attempt(NOV_30_LATE), 5.0),  # began in November: November's
            (_attempt(DEC_1 + 1), 0.25),
            (_attempt(DEC_1 + 2, user=3), 0.5),
            (_attempt(DEC_1 + 3, provider="subscription-provider"), 9.0),  # not metered
            (_attempt(DEC_1 + 4, outcome=Outcome.ERROR, tokens=None), None),  # used nothing
        ],
    )
    assert ledger.group_spent(1) == 0.75
    assert (ledger.member_spent(2), ledger.member_spent(3)) == (0.25, 0.5)
    assert ledger.uncosted(group_id=1) == 0
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text("SELECT month, user_id, usd, calls FROM metered_spend ORDER BY month, user_id")
        ).all()
    assert [tuple(row) for row in rows] == [
        (month_bounds(NOV_30_LATE)[0], 2, 5.0, 1),
        (int(DEC_1), 2, 0.25, 1),
        (int(DEC_1), 3, 0.5, 1),
    ]
    # a served metered call whose cost is unknown is counted as such, never as $0 silently
    _write(engine, ledger, [(_attempt(DEC_1 + 5), None)])
    assert ledger.uncosted(group_id=1) == 1 and ledger.uncosted(user_id=2) == 1
    assert ledger.group_spent(1) == 0.75


def test_paid_3_token_counting_is_free_and_never_an_uncosted_metered_call(engine: Engine) -> None:
    """Counting tokens costs nothing on the metered APIs (Anthropic's and Gemini's count_tokens are
    free, and report no usage): such an attempt is neither spend nor an *uncosted* call."""
    ledger = _ledger(engine, FakeClock(wall=DEC_1 + 60))
    counted = _attempt(DEC_1 + 1, tokens=None, operation="count_tokens")
    _write(engine, ledger, [(counted, None), (counted, None), (_attempt(DEC_1 + 2), 0.25)])
    assert ledger.uncosted(group_id=1) == 0 and ledger.uncosted(user_id=2) == 0
    assert ledger.group_spent(1) == 0.25
    with engine.connect() as connection:
        calls = connection.execute(sa.text("SELECT SUM(calls) FROM metered_spend")).scalar_one()
    assert calls == 1


def test_paid_3_blocked_answers_caps_unpriced_models_and_the_reset(engine: Engine) -> None:
    clock = FakeClock(wall=DEC_1 + 60)
    ledger = _ledger(engine, clock)
    ledger.refresh()
    assert ledger.blocked(1, 2, "gpt-5.5") is None  # no caps
    assert ledger.blocked(1, 2, "no-such-model-anywhere") == ("unpriced_model", None)
    _caps(engine, group=1.0, u3=0.5, u4=0.0)
    ledger.refresh()
    assert ledger.blocked(1, 2, "gpt-5.5") is None
    _write(engine, ledger, [(_attempt(DEC_1 + 1, user=3), 0.5)])
    assert ledger.blocked(1, 3, "gpt-5.5") == ("metered_budget_exhausted", JAN_1)  # the member's cap
    assert ledger.blocked(1, 2, "gpt-5.5") is None  # the group has 0.5 of 1.0 left
    assert ledger.blocked(1, 4, "gpt-5.5") is None  # an admin's member limit is not enforced (TEAM-1)
    _write(engine, ledger, [(_attempt(DEC_1 + 2, user=2), 0.5)])
    assert ledger.blocked(1, 2, "gpt-5.5") == ("metered_budget_exhausted", JAN_1)  # the group's cap
    assert ledger.blocked(1, 4, "gpt-5.5") == ("metered_budget_exhausted", JAN_1)
    _caps(engine, group=None, u3=None)
    ledger.refresh()
    assert ledger.blocked(1, 3, "gpt-5.5") is None  # caps removed
    _caps(engine, group=0.0)
    ledger.refresh()
    assert ledger.blocked(1, 2, "gpt-5.5") == ("metered_budget_exhausted", JAN_1)  # 0: no metered use


def test_paid_3_a_new_month_starts_from_zero(engine: Engine) -> None:
    clock = FakeClock(wall=NOV_30_LATE)
    ledger = _ledger(engine, clock)
    _caps(engine, group=1.0)
    ledger.refresh()
    _write(engine, ledger, [(_attempt(NOV_30_LATE), 2.0)])
    assert ledger.blocked(1, 2, "gpt-5.5") == ("metered_budget_exhausted", DEC_1)
    clock.advance(60)  # December, before anything was read again
    assert ledger.blocked(1, 2, "gpt-5.5") is None
    assert ledger.group_spent(1) == 0.0 and ledger.reset_at() == int(JAN_1)


def test_paid_3_sums_survive_a_restart(engine: Engine) -> None:
    clock = FakeClock(wall=DEC_1 + 60)
    _caps(engine, group=1.0)
    first = _ledger(engine, clock)
    _write(engine, first, [(_attempt(DEC_1 + 1), 0.6), (_attempt(DEC_1 + 2, user=3), 0.4)])
    again = _ledger(engine, clock)  # a restarted gateway
    assert again.group_spent(1) == 0.0
    again.start()
    try:
        assert again.group_spent(1) == 1.0 and again.member_spent(3) == 0.4
        assert again.blocked(1, 2, "gpt-5.5") == ("metered_budget_exhausted", JAN_1)
    finally:
        again.close()


def test_paid_3_two_writers_on_one_database_count_every_cost_once(tmp_path: Path) -> None:
    """Two engines (two connections, as two replicas) adding to the same row at once: the atomic
    ``usd = usd + :cost`` loses nothing, and each sees the other's spend."""
    _engine(tmp_path).dispose()
    clock = FakeClock(wall=DEC_1 + 60)
    engines = [create_db_engine(f"sqlite:///{tmp_path / 'sublane.db'}") for _ in range(2)]
    ledgers = [_ledger(engine, clock) for engine in engines]
    rounds = 50
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            for step in range(rounds):
                _write(
                    engines[index],
                    ledgers[index],
                    [(_attempt(DEC_1 + step), 0.01), (_attempt(DEC_1 + step, user=3), 0.02)],
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for ledger in ledgers:
        ledger.refresh()
        assert ledger.group_spent(1) == pytest.approx(2 * rounds * 0.03, abs=1e-9)
        assert ledger.member_spent(2) == pytest.approx(2 * rounds * 0.01, abs=1e-9)
    with engines[0].connect() as connection:
        calls = connection.execute(sa.text("SELECT SUM(calls) FROM metered_spend")).scalar_one()
    assert calls == 4 * rounds
    for engine in engines:
        engine.dispose()


def test_paid_3_the_writers_own_read_is_used_and_a_rolled_back_batch_is_not(engine: Engine) -> None:
    clock = FakeClock(wall=DEC_1 + 60)
    ledger = _ledger(engine, clock)
    _write(engine, ledger, [(_attempt(DEC_1 + 1), 0.5)])
    assert ledger.group_spent(1) == 0.5
    _write(engine, ledger, [(_attempt(DEC_1 + 2), 0.5)])
    assert ledger.group_spent(1) == 1.0  # the writer's own read, applied at commit
    with engine.connect() as connection:  # a rolled-back batch leaves the sums as they were
        transaction = connection.begin()
        ledger.add(connection, [_attempt(DEC_1 + 3)], [5.0])
        transaction.rollback()
    ledger.rolled_back()
    ledger.committed()
    assert ledger.group_spent(1) == 1.0


def test_paid_3_a_read_begun_before_a_write_is_committed_never_replaces_it(engine: Engine) -> None:
    """A background refresh that read the sums before this replica's next batch was committed, and
    finishes after it, is dropped: the writer's newer sums stay what selection reads."""
    clock = FakeClock(wall=DEC_1 + 60)
    ledger = _ledger(engine, clock)
    _write(engine, ledger, [(_attempt(DEC_1 + 1), 0.5)])
    read_sums, go_on = threading.Event(), threading.Event()

    def hold(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        # the refresh's second query (the caps): its sums are read already, as they were then
        if threading.current_thread().name == "stale-refresh" and "resource_groups" in statement:
            read_sums.set()
            go_on.wait(10)

    sa.event.listen(engine, "before_cursor_execute", hold)
    stale = threading.Thread(target=ledger.refresh, name="stale-refresh")
    stale.start()
    assert read_sums.wait(10)
    _write(engine, ledger, [(_attempt(DEC_1 + 2), 0.5)])  # committed while the refresh is under way
    assert ledger.group_spent(1) == 1.0
    go_on.set()
    stale.join(10)
    sa.event.remove(engine, "before_cursor_execute", hold)
    assert ledger.group_spent(1) == 1.0  # not the 0.5 the refresh had read
    ledger.refresh()
    assert ledger.group_spent(1) == 1.0
