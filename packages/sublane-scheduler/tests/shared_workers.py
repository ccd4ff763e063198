"""What the SCALE tests' replica processes run (a module of its own: spawned processes import it)."""

from __future__ import annotations

import asyncio
import multiprocessing.synchronize
import os

from redis.asyncio import Redis

from sublane_scheduler._shared import SharedLimits


def hold_leases(url: str, namespace: str, rounds: int, limit: int, tasks: int = 4) -> None:
    """A replica's concurrent requests on one account: acquire, count the holders with a counter of
    their own, give back (in its own process, ``tasks`` at once)."""

    async def requests(task: int, shared: SharedLimits, client: Redis) -> None:
        for index in range(rounds):
            request_id = f"{os.getpid()}-{task}-{index}"
            if await shared.acquire([(7, limit)], request_id) is None:
                await asyncio.sleep(0)
                continue
            holders = await client.incr(f"{namespace}:holders")
            await client.sadd(f"{namespace}:seen", str(holders))  # type: ignore[misc]
            await asyncio.sleep(0.001)
            await client.decr(f"{namespace}:holders")
            assert await shared.release(7, request_id)

    async def run() -> None:
        client = Redis.from_url(url)
        shared = SharedLimits(client, namespace=namespace)
        await asyncio.gather(*(requests(task, shared, client) for task in range(tasks)))
        await shared.aclose()
        await client.aclose()

    asyncio.run(run())


def take_and_wait(url: str, namespace: str, ready: multiprocessing.synchronize.Event) -> None:
    async def run() -> None:
        client = Redis.from_url(url)
        assert await SharedLimits(client, namespace=namespace, ttl_s=0.5).acquire([(3, 1)], "dying") == 3
        ready.set()
        await asyncio.sleep(60)  # killed before this ends

    asyncio.run(run())


def cycle_in_batches(url: str, namespace: str, ready: multiprocessing.synchronize.Event) -> None:
    """A busy replica: eight requests take account 9's eight slots in one write, then give them back
    in one pipelined batch, over and over, until it is killed (mid-batch, as likely as not)."""

    async def run() -> None:
        client = Redis.from_url(url)
        shared = SharedLimits(client, namespace=namespace, ttl_s=0.5)
        cycle = 0
        while True:
            cycle += 1
            ids = [f"{os.getpid()}-{cycle}-{index}" for index in range(8)]
            taken = await asyncio.gather(*(shared.acquire([(9, 8)], lease_id) for lease_id in ids))
            held = [lease_id for lease_id, account in zip(ids, taken, strict=True) if account == 9]
            await shared.finish([(9, lease_id, "") for lease_id in held], [])
            if cycle == 20:
                ready.set()

    asyncio.run(run())
