"""Work a replica runs in the background, ended together at shutdown with its threads finished.

Background work (alert deliveries, the work a management change starts) often waits on a worker
thread that uses the database. A native ``Task.cancel()`` abandons such a thread: it goes on with a
connection checked out while the gateway disposes its engine, and the connection is dropped later
by the garbage collector instead of being closed. Each task here runs in an anyio cancel scope;
anyio delivers a scope's cancellation to a task waiting on ``anyio.to_thread.run_sync`` only once
the thread has returned, so :meth:`BackgroundTasks.close` ends with no thread still running.
anyio also cancels again, every loop turn, until the task leaves its scope: a cancellation that a
library loses (redis-py on Python 3.11, under a replica's Redis loops) still ends the task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio


class BackgroundTasks:
    """Tasks started outside any task group (from callbacks and signals), ended together."""

    def __init__(self) -> None:
        #: Each task and, once it runs, its cancel scope (anyio makes one only inside a task).
        self._scopes: dict[asyncio.Task[None], anyio.CancelScope | None] = {}

    def start(
        self, work: Callable[..., Awaitable[object]], *args: Any, name: str | None = None
    ) -> asyncio.Task[None]:
        """Run ``work(*args)`` (called in the task: a task cancelled before it ran never makes it).
        May be called from a callback of the loop, outside any task."""
        scopes = self._scopes

        async def run() -> None:
            with anyio.CancelScope() as scope:
                scopes[task] = scope
                await work(*args)

        task = asyncio.get_running_loop().create_task(run(), name=name)
        scopes[task] = None
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._scopes.pop(task, None)

    def __len__(self) -> int:
        return len(self._scopes)

    async def close(self) -> None:
        """Cancel every task and wait until each has ended (its worker thread, if any, returned)."""
        tasks = list(self._scopes)
        for task, scope in self._scopes.items():
            if scope is None:
                task.cancel()  # not started yet: nothing of it runs anywhere
            else:
                scope.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
