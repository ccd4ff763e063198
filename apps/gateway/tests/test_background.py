"""Background work ends at shutdown with its worker threads returned: a thread still using the
database while the engine is disposed would keep a connection the pool never closes."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio.to_thread

from sublane_gateway.pipeline._background import BackgroundTasks


async def test_scale_3_background_work_ends_with_its_database_threads_at_shutdown() -> None:
    returned = threading.Event()
    started = threading.Event()

    def slow_query() -> None:
        started.set()
        time.sleep(0.3)
        returned.set()

    work = BackgroundTasks()
    task = work.start(anyio.to_thread.run_sync, slow_query)
    while not started.is_set():
        await asyncio.sleep(0.01)
    assert len(work) == 1
    await work.close()
    assert returned.is_set()  # close() waited for the thread, not only for the task
    assert task.done() and len(work) == 0


async def test_scale_3_work_cancelled_before_it_ran_is_never_made() -> None:
    made: list[int] = []

    async def record(value: int) -> None:
        made.append(value)

    work = BackgroundTasks()
    task = work.start(record, 1)
    task.cancel()  # before its first step (a loop shutting down cancels such tasks)
    await asyncio.gather(task, return_exceptions=True)
    assert made == [] and len(work) == 0
