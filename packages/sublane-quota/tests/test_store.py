"""QUOTA-8: saved before published, conditional writes, restarts keep observations."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quota_harness import set_revision
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import FakeClock, QuotaObservation, signals
from sublane_quota import QuotaBook, QuotaStore


def obs(at: float, used: float, *, account: int = 1, revision: int = 1) -> signals.QuotaObserved:
    return signals.QuotaObserved(
        account_id=account,
        lifecycle_revision=revision,
        observed_at=at,
        plan="plus",
        windows=(signals.QuotaWindow("primary", used, 18000, at + 3600),),
    )


def stored(engine: Engine) -> list[QuotaObservation]:
    with Session(engine) as db:
        return list(db.exec(select(QuotaObservation)))


def test_quota_8_an_older_refresh_is_rejected_by_the_conditional_write(
    engine: Engine, clock: FakeClock
) -> None:
    store = QuotaStore(engine)
    now = clock.time()
    assert store.write(obs(now, 100.0))
    assert store.write(obs(now - 5, 3.0)) == ()  # began before the newer answer arrived
    (row,) = stored(engine)
    assert row.used_percent == 100.0 and row.observed_at == now


def test_quota_8_a_refresh_of_an_earlier_lifecycle_writes_nothing(engine: Engine, clock: FakeClock) -> None:
    store = QuotaStore(engine)
    now = clock.time()
    set_revision(engine, 1, 2)  # disabled and enabled while the read ran
    assert store.write(obs(now, 100.0, revision=1)) == ()
    assert stored(engine) == []
    assert store.write(obs(now, 100.0, revision=2))
    assert [row.lifecycle_revision for row in stored(engine)] == [2]


def test_quota_8_restart_loads_only_the_current_lifecycle(engine: Engine, clock: FakeClock) -> None:
    store = QuotaStore(engine)
    now = clock.time()
    store.write(obs(now, 42.0, account=1))
    store.write(obs(now, 7.0, account=2))
    set_revision(engine, 2, 5)  # re-authorized: its old rows no longer count
    loaded = QuotaStore(engine).load()
    assert [(o.account_id, o.windows[0].used_percent) for o in loaded] == [(1, 42.0)]
    store.drop_before(2, 5)
    assert [row.account_id for row in stored(engine)] == [1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    writes=st.lists(
        st.tuples(st.integers(0, 50), st.integers(1, 3), st.floats(0, 100)), min_size=1, max_size=12
    ),
    current=st.integers(1, 3),
)
def test_quota_8_in_any_order_the_newest_observation_of_the_current_lifecycle_wins(
    engine: Engine, clock: FakeClock, writes: list[tuple[int, int, float]], current: int
) -> None:
    """Whatever order refreshes and answers land in, the stored window is the newest one of the
    account's current lifecycle, and the book (fed only what was written) agrees with it."""
    with Session(engine) as db:
        for row in db.exec(select(QuotaObservation)):
            db.delete(row)
        db.commit()
    set_revision(engine, 1, current)
    store, book = QuotaStore(engine), QuotaBook(clock)
    base = clock.time()
    for offset, revision, used in writes:
        observation = obs(base - offset, used, revision=revision)
        written = store.write(observation)
        if written:
            book.apply(
                signals.QuotaObserved(
                    account_id=1,
                    lifecycle_revision=revision,
                    observed_at=observation.observed_at,
                    plan=None,
                    windows=written,
                )
            )
    eligible = [(base - offset, used) for offset, revision, used in writes if revision == current]
    rows = stored(engine)
    if not eligible:
        assert rows == [] and book.windows(1) == []
        return
    newest = max(at for at, _ in eligible)
    (row,) = rows
    assert row.observed_at == newest and row.lifecycle_revision == current
    assert row.used_percent in {used for at, used in eligible if at == newest}
    (kept,) = book.windows(1)
    assert kept.observed_at == newest
