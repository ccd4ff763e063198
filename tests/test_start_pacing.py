"""A burst of model calls, paced one per turn of the event loop, is served whole (issue #19); the
pacing can be switched off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx2
from gateway_pool import Pool

from sublane_gateway import create_app
from sublane_gateway._app import asgi_app
from sublane_gateway.testing import make_settings, migrate

BURST = 60


async def test_a_burst_paced_one_call_per_turn_is_served_whole(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2, model_starts_per_turn=1, workspace_capacity=1000, wait_queue_max=1000)
    pool.admin.patch("/api/users/1", json={"member_concurrency": 0})  # the key's owner: unlimited
    headers = {"authorization": f"Bearer {pool.key}"}
    async with httpx2.AsyncClient(base_url=pool.gateway.url, headers=headers, timeout=30) as client:

        async def one(index: int) -> int:
            body = {"model": "gpt-5-codex", "input": f"call {index}", "stream": index % 2 == 0}
            response = await client.post("/v1/responses", json=body)
            return response.status_code

        statuses = await asyncio.gather(*(one(index) for index in range(BURST)))
    assert statuses == [200] * BURST
    assert len(pool.finished) == BURST and {record.outcome for record in pool.finished} == {"success"}
    assert pool.runtime.leases.total_in_flight() == 0


def test_model_starts_per_turn_0_serves_unpaced(tmp_path: Path) -> None:
    paced = make_settings(tmp_path / "paced")
    unpaced = make_settings(tmp_path / "unpaced", model_starts_per_turn=0)
    for settings in (paced, unpaced):
        migrate(settings)
    assert paced.model_starts_per_turn == 8
    pacer = asgi_app(create_app(paced)).pacer
    assert pacer is not None and pacer.per_turn == 8
    assert asgi_app(create_app(unpaced)).pacer is None
