"""What one script call costs the replica's CPU, by Redis client (issue #49).

``python bench/redis_clients.py`` starts a Redis server (the tests' ``redis-server``) and calls the
acquire script (one candidate with room: ``EVALSHA`` of ``_shared.ACQUIRE``) ``BENCH_REDIS_CALLS``
times (default 4,000), one at a time and eight at once, through:

- **redis-py**: its asyncio client as the gateway built it before issue #49 (a blocking pool of 32,
  a socket timeout); with ``hiredis`` importable (``PYTHONPATH`` of a folder it was installed in,
  never a project dependency) redis-py parses with it;
- **coredis**, when importable (the same way);
- **link**: ``sublane_scheduler._redis_link.ScriptLink``, what the replica uses now.

It prints the process's CPU (``time.process_time``) and the wall time per call; the JSON goes to
stdout. BENCHMARKS.md ("Issue #49") says what it means.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvloop
from redis.asyncio import BlockingConnectionPool, Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from redis_server import RedisServer  # the tests' real Redis

from sublane_scheduler._redis_link import ScriptLink
from sublane_scheduler._shared import _ACQUIRE, ACQUIRE

CALLS = int(os.environ.get("BENCH_REDIS_CALLS", "4000"))
KEYS = ["{b}:lease:1", "{b}:model:1", "{b}:waiters:1", "{b}:waiting:1", "{b}:rotation:"]

Call = Callable[[int], Awaitable[Any]]


async def measure(call: Call) -> dict[str, float]:
    for index in range(200):  # warm: connected, the script known to Redis
        await call(index)
    out: dict[str, float] = {}
    for concurrency in (1, 8):
        each = CALLS // concurrency
        cpu, wall = time.process_time(), time.perf_counter()

        async def worker(start: int, each: int = each) -> None:
            for index in range(start, start + each):
                await call(index)

        await asyncio.gather(*(worker(task * each) for task in range(concurrency)))
        done = each * concurrency
        out[f"c{concurrency}_cpu_us"] = round((time.process_time() - cpu) * 1e6 / done, 1)
        out[f"c{concurrency}_wall_us"] = round((time.perf_counter() - wall) * 1e6 / done, 1)
    return out


async def main_async(url: str) -> dict[str, Any]:
    results: dict[str, Any] = {"hiredis": importlib.util.find_spec("hiredis") is not None}
    pool = BlockingConnectionPool.from_url(
        url, max_connections=32, timeout=5.0, socket_connect_timeout=2.0, socket_timeout=5.0
    )
    redis = Redis.from_pool(pool)
    script = redis.register_script(_ACQUIRE)

    async def redis_py(index: int) -> Any:
        return await script(keys=KEYS, args=[30000, f"p{index}", "0", 1 << 30, 0])

    results["redis-py"] = await measure(redis_py)
    link = ScriptLink(redis)

    async def lean(index: int) -> Any:
        return await link.run(ACQUIRE, KEYS, [30000, f"l{index}", "0", 1 << 30, 0])

    results["link"] = await measure(lean)
    await link.aclose()
    await redis.aclose()
    if importlib.util.find_spec("coredis") is not None:
        import coredis  # optional: only when installed beside the project

        client: Any = coredis.Redis.from_url(url)
        async with client:
            other = client.register_script(_ACQUIRE)

            async def core(index: int) -> Any:
                return await other(keys=KEYS, args=[30000, f"c{index}", "0", 1 << 30, 0])

            results["coredis"] = await measure(core)
    return results


def main() -> None:
    server = RedisServer().start()
    try:
        print(json.dumps(uvloop.run(main_async(server.url)), indent=2))
    finally:
        server.remove()


if __name__ == "__main__":
    main()
