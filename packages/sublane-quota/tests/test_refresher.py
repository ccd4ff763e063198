"""QUOTA-1 and QUOTA-6: background reads started by traffic, bounded, coalesced, backed off.

The reader here stands in for a provider: it answers as the adapters' ``read_quota`` does, and
counts and holds its calls so the tests can see concurrency and coalescing.
"""

from __future__ import annotations

import asyncio

import pytest
from quota_harness import set_revision
from sqlalchemy.engine import Engine

from sublane_core import FakeClock, signals
from sublane_quota import BACKOFF_S, FRESH_S, QuotaObserver

Quota = tuple[str | None, tuple[signals.QuotaWindow, ...]]


class Provider:
    """A quota endpoint: answers ``used`` per account; ``gate`` holds reads while cleared."""

    def __init__(self) -> None:
        self.used: dict[int, float] = {1: 100.0, 2: 10.0, 3: 50.0}
        self.failing: set[int] = set()
        self.calls: list[int] = []
        self.running = 0
        self.peak = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def __call__(self, account_id: int, provider: str) -> Quota:
        self.calls.append(account_id)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await self.gate.wait()
            if account_id in self.failing:
                raise RuntimeError("HTTP 500")
            used = self.used[account_id]
            return "plus", (signals.QuotaWindow("primary", used, 18000, None, limit_reached=used >= 100),)
        finally:
            self.running -= 1


async def settle(observer: QuotaObserver) -> None:
    refresher = observer.refresher
    assert refresher is not None
    for _ in range(200):
        await asyncio.sleep(0.005)
        if not any(refresher.reading(account) for account in (1, 2, 3)):
            break
    await asyncio.sleep(0.02)


@pytest.fixture
async def observer(engine: Engine, clock: FakeClock) -> QuotaObserver:
    provider = Provider()
    observer = QuotaObserver(engine, clock, provider)
    observer.provider = provider  # type: ignore[attr-defined]
    await observer.start()
    return observer


def provider_of(observer: QuotaObserver) -> Provider:
    provider: Provider = observer.provider  # type: ignore[attr-defined]
    return provider


async def test_quota_1_traffic_starts_a_background_read_that_the_request_does_not_wait_for(
    observer: QuotaObserver,
) -> None:
    provider = provider_of(observer)
    provider.gate.clear()
    observer.demand(1, "codex", 1)  # returns at once, the read is held
    assert observer.exhausted_until(1, "gpt-5") is None
    assert observer.refresher is not None and observer.refresher.reading(1)
    provider.gate.set()
    await settle(observer)
    assert provider.calls == [1] and not observer.refresher.reading(1)
    assert observer.exhausted_until(1, "gpt-5") is not None


async def test_quota_1_at_most_two_reads_at_once_and_duplicates_coalesce(observer: QuotaObserver) -> None:
    provider = provider_of(observer)
    provider.gate.clear()
    for _ in range(5):
        for account in (1, 2, 3):
            observer.demand(account, "codex", 1)
    await asyncio.sleep(0.02)
    assert provider.running == 2
    provider.gate.set()
    await settle(observer)
    assert sorted(provider.calls) == [1, 2, 3] and provider.peak == 2


async def test_quota_1_no_read_while_what_is_known_is_recent_and_none_without_traffic(
    observer: QuotaObserver, clock: FakeClock
) -> None:
    provider = provider_of(observer)
    observer.demand(2, "codex", 1)
    await settle(observer)
    clock.advance(30)
    observer.demand(2, "codex", 1)  # observed 30 s ago
    await settle(observer)
    assert provider.calls == [2]
    clock.advance(3600)  # an idle hour: nothing reads by itself
    await asyncio.sleep(0.05)
    assert provider.calls == [2]
    observer.demand(2, "codex", 1)  # traffic again
    await settle(observer)
    assert provider.calls == [2, 2]


async def test_quota_1_failed_reads_back_off(observer: QuotaObserver, clock: FakeClock) -> None:
    provider = provider_of(observer)
    provider.failing.add(2)
    refresher = observer.refresher
    assert refresher is not None
    for delay in BACKOFF_S:
        observer.demand(2, "codex", 1)
        await settle(observer)
        assert refresher.retry_at(2) == pytest.approx(clock.time() + delay)
        clock.advance(delay - 1)
        observer.demand(2, "codex", 1)  # still backing off: no read
        await settle(observer)
        clock.advance(1)
    assert len(provider.calls) == len(BACKOFF_S)
    provider.failing.clear()
    observer.demand(2, "codex", 1)
    await settle(observer)
    assert refresher.retry_at(2) is None and observer.remaining(2, "gpt-5") == 0.9


async def test_quota_6_a_failed_refresh_keeps_the_last_good_observation_until_its_deadline(
    observer: QuotaObserver, clock: FakeClock
) -> None:
    provider = provider_of(observer)
    observer.demand(1, "codex", 1)
    await settle(observer)
    until = observer.exhausted_until(1, "gpt-5")
    assert until == clock.time() + FRESH_S
    provider.failing.add(1)
    clock.advance(100)  # old enough to refresh; the refresh fails
    observer.demand(1, "codex", 1)
    await settle(observer)
    assert provider.calls == [1, 1]
    assert observer.exhausted_until(1, "gpt-5") == until  # the last good one, still fresh
    clock.advance(FRESH_S - 100)
    assert observer.exhausted_until(1, "gpt-5") is None  # and not a moment longer


async def test_quota_8_a_read_that_began_before_a_newer_observation_does_not_replace_it(
    observer: QuotaObserver, clock: FakeClock
) -> None:
    provider = provider_of(observer)
    provider.used[2] = 5.0
    provider.gate.clear()
    observer.demand(2, "codex", 1)  # begins now, answers "5 %" later
    await asyncio.sleep(0.01)
    clock.advance(1)
    reached = signals.QuotaObserved(
        account_id=2,
        lifecycle_revision=1,
        observed_at=clock.time(),
        plan=None,
        windows=(signals.QuotaWindow("primary", 100.0, 18000, None, limit_reached=True),),
    )
    assert await observer.record(reached)  # a usage-limit answer, meanwhile
    provider.gate.set()
    await settle(observer)
    assert observer.exhausted_until(2, "gpt-5") is not None


async def test_quota_8_disable_enable_while_a_read_runs_discards_it(
    observer: QuotaObserver, engine: Engine
) -> None:
    provider = provider_of(observer)
    provider.gate.clear()
    observer.demand(1, "codex", 1)
    await asyncio.sleep(0.01)
    set_revision(engine, 1, 2)
    observer.invalidate(1, 2)
    provider.gate.set()
    await settle(observer)
    assert observer.exhausted_until(1, "gpt-5") is None


async def test_quota_8_observations_survive_a_restart(
    observer: QuotaObserver, engine: Engine, clock: FakeClock
) -> None:
    observer.demand(1, "codex", 1)
    await settle(observer)
    await observer.close()
    again = QuotaObserver(engine, clock)
    await again.start()
    assert again.exhausted_until(1, "gpt-5") == clock.time() + FRESH_S
    await again.close()


async def test_header_observations_coalesce_and_repeats_are_not_rewritten(
    observer: QuotaObserver, clock: FakeClock
) -> None:
    def header(used: float) -> signals.QuotaObserved:
        return signals.QuotaObserved(
            account_id=3,
            lifecycle_revision=1,
            observed_at=clock.time(),
            plan="plus",
            windows=(signals.QuotaWindow("primary", used, 18000, clock.time() + 900),),
        )

    observer.observe(header(10.0))
    await asyncio.sleep(0.05)
    writes = observer.writes
    for _ in range(20):
        observer.observe(header(10.0))  # says what is known: no write
    await asyncio.sleep(0.05)
    assert observer.writes == writes and observer.remaining(3, "m") == 0.9
    observer.observe(header(20.0))
    for _ in range(200):
        await asyncio.sleep(0.005)
        if observer.remaining(3, "m") == 0.8:
            break
    assert observer.remaining(3, "m") == 0.8
