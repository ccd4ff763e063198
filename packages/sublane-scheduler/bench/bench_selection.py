"""Micro-benchmark: choosing an account among 1,000 and taking its slot (a benchmark, not a test).

Run: ``make bench-scheduler`` (``pytest packages/sublane-scheduler/bench/bench_selection.py``).
Selection must stay sub-millisecond with 1,000 accounts in the group (scheduler issue).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from sublane_core import Account, FakeClock, GroupAccount, ResourceGroup, create_db_engine, upgrade_database
from sublane_scheduler import (
    AccountDirectory,
    Admission,
    AffinityStore,
    Candidates,
    CooldownBook,
    CooldownPolicy,
    LeaseTable,
    RouteRequest,
    Scheduler,
    WaitRoom,
)

ACCOUNTS = 1000


@pytest.fixture(scope="module")
def scheduler(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Scheduler, asyncio.AbstractEventLoop]]:
    path: Path = tmp_path_factory.mktemp("bench") / "sublane.db"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade_database(engine)
    with Session(engine) as db:
        db.add(ResourceGroup(id=1, name="default", created_at=0, updated_at=0))
        db.flush()
        for index in range(1, ACCOUNTS + 1):
            db.add(
                Account(
                    id=index, provider="codex", name=f"a{index}", credentials=b"x", created_at=0, updated_at=0
                )
            )
            db.add(GroupAccount(group_id=1, account_id=index))
        db.commit()
    clock = FakeClock()
    directory = AccountDirectory(engine)
    leases = LeaseTable()
    cooldowns = CooldownBook(clock, CooldownPolicy())
    for index in range(1, ACCOUNTS, 3):  # a third of the pool cooling: selection must skip them
        cooldowns.rate_limited(index, 600)
    scheduler = Scheduler(
        clock=clock,
        directory=directory,
        leases=leases,
        cooldowns=cooldowns,
        affinity=AffinityStore(engine, clock),
        admission=Admission(clock, 100_000),
        room=WaitRoom(100),
        wait_timeout_s=30,
    )
    loop = asyncio.new_event_loop()
    loop.run_until_complete(directory.refresh())
    yield scheduler, loop
    loop.close()
    engine.dispose()


def test_select_and_release_among_1000_accounts(
    benchmark: Any, scheduler: tuple[Scheduler, asyncio.AbstractEventLoop]
) -> None:
    sched, loop = scheduler
    accounts = sched.directory.of_group(1)
    candidates = Candidates(accounts)

    async def eligible() -> Candidates:
        return candidates

    request = RouteRequest(request_id="req_bench", user_id=1, group_id=1, model="gpt-5-codex")

    async def once() -> None:
        grant = await sched.acquire(request, eligible)
        grant.release("success")

    def run() -> None:
        loop.run_until_complete(once())

    benchmark(run)
    assert sched.leases.total_in_flight() == 0
    assert benchmark.stats.stats.median < 0.001  # sub-millisecond, event loop round trip included
