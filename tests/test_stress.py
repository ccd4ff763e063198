"""Hundreds of concurrent streams through the gateway with random cancellations, faults and limit changes.

Bounded in count and time. Afterwards no slot has leaked: every lease was released exactly once,
in-flight counts and admission are back to zero, no waiter is left, and the simulator has no open
stream.
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
from collections.abc import Callable

import httpx2
import pytest
from gateway_pool import Pool

from sublane_core import signals
from sublane_scheduler import Lease
from sublane_sim import Behaviour

STREAMS = 300
ACCOUNTS = 4
SEED = 20261129

pytestmark = pytest.mark.slow


def _behaviour(rng: random.Random) -> Behaviour:
    roll = rng.random()
    if roll < 0.08:
        return Behaviour.error(rng.choice([500, 502, 503]))
    if roll < 0.12:
        return Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="1")
    if roll < 0.17:
        return Behaviour.cut(rng.randint(1, 4), cut_mode=rng.choice(["eof", "abort"]))
    if roll < 0.21:
        return Behaviour.overload(rng.randint(0, 3))
    return Behaviour.ok(deltas=rng.randint(2, 12), pacing_ms=rng.choice([0, 5, 20]))


async def test_adm_6_no_slot_leaks_under_random_cancellation_faults_and_limit_changes(
    make_pool: Callable[..., Pool], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(SEED)
    pool = make_pool(
        accounts=ACCOUNTS,
        wait_timeout_s=5,
        cooldown_fallback_s=1,
        model_failure_threshold=0,
        workspace_capacity=1000,
    )
    pool.admin.patch("/api/users/1", json={"member_concurrency": 0})  # the key's owner: unlimited
    for account in pool.sim_accounts:
        pool.sim.script(account.id, *[_behaviour(rng) for _ in range(STREAMS // ACCOUNTS + 40)])
        pool.sim.set_default(account.id, Behaviour.ok(deltas=3))
    for account_id in pool.account_ids:
        pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": rng.randint(2, 8)})
    released: dict[int, int] = {}  # id(lease) -> releases that gave a slot back
    kept: list[Lease] = []  # keeps each lease alive so that no id is reused
    original_release = Lease.release

    def counting_release(lease: Lease, outcome: str) -> bool:
        gave_back = original_release(lease, outcome)
        if gave_back:
            kept.append(lease)
            released[id(lease)] = released.get(id(lease), 0) + 1
        return gave_back

    monkeypatch.setattr(Lease, "release", counting_release)
    signalled: list[str] = []
    disconnect = signals.lease_released.connect(lambda payload: signalled.append(payload.request_id))
    # httpx2 (Pydantic's maintained fork of httpx): under this load httpcore 1.0.9's pool left a
    # cancelled request's connection unclosed now and then (1 run in 5 here; encode/httpcore#1093),
    # a ResourceWarning that failed whichever test the collector next ran in; httpx2: 10 of 10 clean.
    # A new connection per limit change: under this load the test's own loop can stall past the
    # server's 5 s keep-alive, and a reused idle connection then races its close (ReadError).
    limits = httpx2.AsyncClient(
        base_url=pool.gateway.url,
        cookies=dict(pool.admin.cookies),
        timeout=10,
        limits=httpx2.Limits(max_keepalive_connections=0),
    )
    client = httpx2.AsyncClient(
        base_url=pool.gateway.url,
        headers={"authorization": f"Bearer {pool.key}"},
        timeout=30,
        limits=httpx2.Limits(max_connections=STREAMS),
    )
    statuses: list[int] = []

    async def one(index: int) -> None:
        body = {"model": "gpt-5-codex", "input": f"request {index}", "stream": True}
        headers = {"session-id": f"thread-{index % 40}"} if index % 3 == 0 else {}
        async with client.stream("POST", "/v1/responses", json=body, headers=headers) as response:
            statuses.append(response.status_code)
            async for _ in response.aiter_bytes():
                pass

    async def change_limits() -> None:
        for _ in range(15):
            await asyncio.sleep(rng.uniform(0.05, 0.3))
            account_id = rng.choice(pool.account_ids)
            await limits.patch(
                f"/api/accounts/{account_id}/limits", json={"max_concurrency": rng.randint(1, 8)}
            )

    started = time.monotonic()
    try:
        tasks = [asyncio.create_task(one(index)) for index in range(STREAMS)]
        changer = asyncio.create_task(change_limits())
        for _ in range(STREAMS // 3):  # cancel a third at random moments: waiting, streaming, or done
            await asyncio.sleep(rng.uniform(0, 0.02))
            rng.choice(tasks).cancel()
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 45)
        await changer
    finally:
        await client.aclose()
        await limits.aclose()
        gc.collect()  # a connection left unclosed fails this test, not the one the collector next runs in
    assert time.monotonic() - started < 50
    unexpected = [
        r for r in results if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)
    ]
    assert not unexpected, unexpected[:3]
    assert statuses.count(200) > STREAMS // 3  # plenty got through; the rest were refused or cancelled

    runtime = pool.runtime
    deadline = time.monotonic() + 10  # cancelled streams finish their 3 s usage drain (ADM-8)
    while runtime.leases.total_in_flight() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    disconnect()
    leases = runtime.leases
    assert leases.total_in_flight() == 0
    assert leases.acquired_total == leases.released_total
    assert set(released.values()) == {1}  # every lease gave its slot back exactly once
    assert len(released) == leases.released_total == len(signalled)
    assert runtime.scheduler.admission.in_use == 0
    assert runtime.scheduler.room.waiting() == 0
    for account in pool.sim_accounts:
        for _ in range(50):
            if pool.sim.counters(account.id).current_streams == 0:
                break
            await asyncio.sleep(0.1)
        assert pool.sim.counters(account.id).current_streams == 0
    assert len({record.request_id for record in pool.finished}) == len(pool.finished)
