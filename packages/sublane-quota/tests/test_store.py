"""QUOTA-8: saved before published, conditional writes, restarts keep observations."""

from __future__ import annotations

from quota_harness import set_revision
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import FakeClock, QuotaObservation, signals
from sublane_quota import QuotaStore


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
