"""Background quota reads, started by model traffic (QUOTA-1, QUOTA-6).

There is no polling loop: a read starts only when selection considers an account
(:meth:`QuotaRefresher.demand`) and what is known of it is getting old — never while the pool is
idle. The request that caused it does not wait for it.

- At most ``concurrency`` (2) reads run at once; the gateway's reader also takes a metadata slot of
  the workspace capacity (ADM-2, ADM-10) for each.
- A second demand for an account whose read is running joins it (coalescing); an account read
  successfully less than ``min_interval_s`` ago is not read again.
- A failed read backs off per account: 30 s, 1 min, 2 min, 4 min, then 5 min. The last good
  observation stays in the book and steers selection only until its own freshness deadline
  (QUOTA-6).
- Reads are stamped with the time they **began**, so an answer that was under way while a newer
  observation arrived (a response's headers, a usage-limit answer) never replaces it (QUOTA-8).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from sublane_core import Clock, signals
from sublane_quota._book import QuotaBook

_log = logging.getLogger("sublane.quota")

Quota = tuple[str | None, tuple[signals.QuotaWindow, ...]]
BACKOFF_S = (30.0, 60.0, 120.0, 240.0, 300.0)


class QuotaReadSkipped(Exception):
    """Raised by a reader that did not read because the account is read elsewhere now, or the reads
    allowed at once are all running (another replica's, SCALE-2): no failure, no backoff — the
    other read's observation arrives by itself, and a later demand may read."""


class QuotaReader(Protocol):
    """Reads an account's quota from its provider (the gateway wires the adapters' ``read_quota``)."""

    def __call__(self, account_id: int, provider: str) -> Awaitable[Quota]: ...


@dataclass(slots=True)
class _Schedule:
    last_attempt: float = float("-inf")
    failures: int = 0
    retry_at: float = float("-inf")


class QuotaRefresher:
    """Starts, bounds, coalesces and backs off the quota reads of every account."""

    def __init__(
        self,
        clock: Clock,
        book: QuotaBook,
        reader: QuotaReader,
        record: Callable[[signals.QuotaObserved], Awaitable[bool]],
        *,
        concurrency: int = 2,
        refresh_after_s: float = 90.0,
        min_interval_s: float = 60.0,
    ) -> None:
        self._clock = clock
        self._book = book
        self._reader = reader
        self._record = record
        self._concurrency = concurrency
        self.refresh_after_s = refresh_after_s
        self.min_interval_s = min_interval_s
        self._slots: asyncio.Semaphore | None = None
        self._running: dict[int, asyncio.Task[None]] = {}
        self._schedules: dict[int, _Schedule] = {}
        self.reads = 0  # reads begun, for tests and metrics
        self.failures = 0

    def demand(self, account_id: int, provider: str, lifecycle_revision: int) -> None:
        """Selection considered the account: read its quota in the background if that is due.

        Cheap and synchronous (a few dictionary lookups); never waits for the read.
        """
        if account_id in self._running:
            return  # coalesced into the running read
        now = self._clock.time()
        newest = self._book.newest(account_id)
        if newest is not None and newest <= now and now - newest < self.refresh_after_s:
            return
        schedule = self._schedules.get(account_id)
        if schedule is not None and (
            now < schedule.retry_at
            or (schedule.failures == 0 and now - schedule.last_attempt < self.min_interval_s)
        ):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # not on the event loop (nothing to run the read on)
        task = asyncio.ensure_future(self._read(account_id, provider, lifecycle_revision))
        self._running[account_id] = task
        task.add_done_callback(lambda _task: self._running.pop(account_id, None))

    def reading(self, account_id: int) -> bool:
        """Whether a read of the account is under way (a demand now would join it)."""
        return account_id in self._running

    def retry_at(self, account_id: int) -> float | None:
        """When a backing-off account may be read again; ``None`` when it is not backing off."""
        schedule = self._schedules.get(account_id)
        if schedule is None or schedule.failures == 0 or schedule.retry_at <= self._clock.time():
            return None
        return schedule.retry_at

    def invalidate(self, account_id: int) -> None:
        """A new lifecycle: forget the account's schedule (its next demand may read at once)."""
        self._schedules.pop(account_id, None)

    async def _read(self, account_id: int, provider: str, revision: int) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._concurrency)
        async with self._slots:
            started = self._clock.time()
            schedule = self._schedules.setdefault(account_id, _Schedule())
            schedule.last_attempt = started
            self.reads += 1
            try:
                plan, windows = await self._reader(account_id, provider)
            except asyncio.CancelledError:
                raise
            except QuotaReadSkipped:
                self.reads -= 1
                return
            except Exception as exc:  # any failure backs off; nothing reaches a request
                self.failures += 1
                schedule.failures += 1
                delay = BACKOFF_S[min(schedule.failures, len(BACKOFF_S)) - 1]
                schedule.retry_at = self._clock.time() + delay
                _log.info(
                    "quota read of account %s failed (%s); next try in %.0f s",
                    account_id,
                    type(exc).__name__,
                    delay,
                )
                return
            schedule.failures = 0
            schedule.retry_at = float("-inf")
        if windows:
            await self._record(
                signals.QuotaObserved(
                    account_id=account_id,
                    lifecycle_revision=revision,
                    observed_at=started,
                    plan=plan,
                    windows=windows,
                )
            )

    async def close(self) -> None:
        """Cancel running reads (shutdown)."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):  # ending anyway
                await task
