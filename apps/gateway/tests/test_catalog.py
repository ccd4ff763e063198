"""ModelCatalog on its own (CAT-1): bounded, single-flight discovery and when a failure is retried.

Real tasks and a fake clock; the discoverer is a coroutine that counts how many run at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from sqlmodel import Session

from sublane_core import (
    Account,
    AccountModels,
    FakeClock,
    SubLaneError,
    create_db_engine,
    upgrade_database,
)
from sublane_gateway.pipeline._catalog import FRESH_S, MAX_AGE_S, MAX_DISCOVERIES, RETRY_S, ModelCatalog


class CountingDiscoverer:
    """Discovers ``models`` after a release; records the most discoveries running at once."""

    def __init__(self, models: list[str]) -> None:
        self.models = models
        self.calls: list[int] = []
        self.running = 0
        self.most = 0
        self.release = asyncio.Event()
        self.failure: Exception | None = None

    async def __call__(self, account_id: int) -> list[str]:
        self.calls.append(account_id)
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await self.release.wait()
            if self.failure is not None:
                raise self.failure
            return self.models
        finally:
            self.running -= 1


async def _until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.001)


async def test_cat_1_at_most_two_discoveries_run_at_once_and_one_per_account() -> None:
    discover = CountingDiscoverer(["gpt-5-codex"])
    catalog = ModelCatalog(FakeClock(), {"codex": discover})
    lookups = [
        asyncio.ensure_future(catalog.lookup(account_id, "codex")) for account_id in (1, 2, 3, 4, 5, 1, 2, 1)
    ]
    await _until(lambda: discover.running == MAX_DISCOVERIES)
    await asyncio.sleep(0.01)  # the others stay queued behind the two
    assert discover.running == MAX_DISCOVERIES == 2
    discover.release.set()
    results = await asyncio.gather(*lookups)
    assert all(result == frozenset({"gpt-5-codex"}) for result in results)
    assert discover.most == 2
    assert sorted(discover.calls) == [1, 2, 3, 4, 5]  # single-flight: one discovery per account


async def test_cat_1_a_failed_discovery_is_not_retried_for_retry_s() -> None:
    clock = FakeClock()
    discover = CountingDiscoverer([])
    discover.release.set()
    discover.failure = RuntimeError("upstream down")
    catalog = ModelCatalog(clock, {"codex": discover})
    assert await catalog.lookup(1, "codex") is None
    assert await catalog.lookup(1, "codex") is None
    assert discover.calls == [1]
    clock.advance(RETRY_S)
    discover.failure = None
    discover.models = ["gpt-5"]
    assert await catalog.lookup(1, "codex") == frozenset({"gpt-5"})
    assert discover.calls == [1, 1]


async def test_cat_4_an_accounts_own_failure_is_its_answer_and_asked_again_at_once() -> None:
    """The credentials could not be refreshed: that error is the answer, and the next call asks
    again (the vault's own refresh schedule decides whether anything goes upstream, CRED-3)."""
    discover = CountingDiscoverer([])
    discover.release.set()
    discover.failure = SubLaneError("account_refresh_failed", retry_after=30)
    catalog = ModelCatalog(FakeClock(), {"codex": discover})
    assert await catalog.lookup(1, "codex") is None
    failure = catalog.failure(1)
    assert failure is not None and failure.code == "account_refresh_failed"
    discover.failure = None
    discover.models = ["gpt-5"]
    assert await catalog.lookup(1, "codex") == frozenset({"gpt-5"})
    assert discover.calls == [1, 1] and catalog.failure(1) is None


async def test_cat_1_ready_answers_a_warm_catalogue_at_once_and_defers_the_rest() -> None:
    """The ready path (no task, no await) follows :meth:`ModelCatalog.entry`'s rules: fresh is
    served; stale is served while a background refresh runs (single-flight); unknown and over-age
    answer ``None``, so the caller takes the discovery path."""
    clock = FakeClock()
    discover = CountingDiscoverer(["gpt-5"])
    discover.release.set()
    catalog = ModelCatalog(clock, {"codex": discover})
    assert catalog.ready(1, "codex") is None  # unknown: nothing started by ready itself
    assert discover.calls == []
    assert await catalog.lookup(1, "codex") == frozenset({"gpt-5"})
    assert catalog.ready(1, "codex") == frozenset({"gpt-5"})
    assert discover.calls == [1]  # fresh: no discovery
    clock.advance(FRESH_S)
    discover.release.clear()
    discover.models = ["gpt-5", "gpt-5-mini"]
    assert catalog.ready(1, "codex") == frozenset({"gpt-5"})  # stale: served
    assert catalog.ready(1, "codex") == frozenset({"gpt-5"})
    await _until(lambda: discover.running == 1)
    assert discover.calls == [1, 1]  # one background refresh for both reads
    discover.release.set()
    await _until(lambda: catalog.ready(1, "codex") == frozenset({"gpt-5", "gpt-5-mini"}))
    clock.advance(MAX_AGE_S)
    assert catalog.ready(1, "codex") is None  # over-age: not used for routing


async def test_cat_1_ready_waits_for_the_stored_catalogues_to_load(tmp_path: Path) -> None:
    """Before the stored catalogues are read (first call after a start), ready says ``None``."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'sublane.db'}")
    upgrade_database(engine)
    clock = FakeClock()
    with Session(engine) as db:
        db.add(Account(id=1, provider="codex", name="a", credentials=b"x", created_at=0, updated_at=0))
        db.add(AccountModels(account_id=1, models=["gpt-5"], served=["gpt-5"], discovered_at=clock.time()))
        db.commit()
    catalog = ModelCatalog(clock, {"codex": CountingDiscoverer([])}, engine=engine)
    assert catalog.ready(1, "codex") is None
    assert await catalog.lookup(1, "codex") == frozenset({"gpt-5"})
    assert catalog.ready(1, "codex") == frozenset({"gpt-5"})
    engine.dispose()
