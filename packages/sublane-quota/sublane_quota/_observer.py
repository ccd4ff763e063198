"""The quota observer: what providers report about quota, saved, then published to selection.

Observations come from three places: a response's headers and a WebSocket's ``codex.rate_limits``
events (the ``quota_observed`` signal, :meth:`QuotaObserver.observe`), an upstream "usage limit
reached" answer (a direct call, :meth:`QuotaObserver.record`: it must count before the next
selection), and background reads (:class:`~sublane_quota.QuotaRefresher`).

QUOTA-8: every observation is written to SQLite first, by one writer thread, with a conditional
write (:class:`~sublane_quota.QuotaStore`); only the windows that were written are then published
to the in-memory :class:`~sublane_quota.QuotaBook` that selection reads. Header observations of an
account coalesce while a write is pending, and one that repeats what is known is written at most
every ``rewrite_after_s``, so steady traffic costs few writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy.engine import Engine

from sublane_core import AlertOutbox, Clock, background_thread_begins, signals
from sublane_quota._book import QuotaBook
from sublane_quota._refresher import QuotaReader, QuotaRefresher
from sublane_quota._store import QuotaStore

_log = logging.getLogger("sublane.quota")

_Written = tuple[signals.QuotaObserved | None, tuple[signals.QuotaWindow, ...]]


class QuotaObserver:
    """Receives, saves and publishes quota observations; starts background reads on demand.

    It is what the scheduler's ``SubscriptionQuota`` interface asks (the gateway wires it):
    :meth:`exhausted_until`, :meth:`remaining` and :meth:`demand`.
    """

    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        reader: QuotaReader | None = None,
        *,
        concurrency: int = 2,
        rewrite_after_s: float = 30.0,
        outbox: AlertOutbox | None = None,
    ) -> None:
        self._clock = clock
        self.store = QuotaStore(engine, outbox)  # ALERT-2: quota_exhausted / quota_recovered
        self.book = QuotaBook(clock)
        self.rewrite_after_s = rewrite_after_s
        self.refresher = (
            QuotaRefresher(clock, self.book, reader, self.record, concurrency=concurrency)
            if reader is not None
            else None
        )
        self._writer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="sublane-quota-writer", initializer=background_thread_begins
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[int, signals.QuotaObserved] = {}  # newest queued header observation
        self._pending_lock = threading.Lock()
        self.writes = 0  # observations written, for tests and benchmarks
        #: Told every observation saved here (the gateway tells the other replicas, SCALE-2).
        self.on_saved: Callable[[signals.QuotaObserved], None] | None = None

    # -- life -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the saved observations of every account's current lifecycle (QUOTA-8: restarts keep them)."""
        self._loop = asyncio.get_running_loop()
        for observation in await self._loop.run_in_executor(self._writer, self.store.load):
            self.book.apply(observation)

    async def close(self) -> None:
        """Stop background reads and finish the queued writes."""
        if self.refresher is not None:
            await self.refresher.close()
        self._writer.shutdown(wait=True)

    # -- observations -----------------------------------------------------------------------------

    def observe(self, observation: signals.QuotaObserved) -> None:
        """A response reported quota (the ``quota_observed`` receiver): save it, then publish it.

        Never blocks; on the event loop. Observations of an account coalesce while one is queued.
        """
        if not observation.windows or self._repeats(observation):
            return
        account_id = observation.account_id
        with self._pending_lock:
            queued = account_id in self._pending
            self._pending[account_id] = observation
        if not queued:
            self._submit(account_id)

    async def record(self, observation: signals.QuotaObserved) -> bool:
        """Save an observation and publish it before returning; ``False`` when nothing was newer."""
        loop = asyncio.get_running_loop()
        try:
            written = await loop.run_in_executor(self._writer, self._write, observation)
        except RuntimeError:  # shutting down: the observation is dropped, the request goes on
            return False
        return self._publish(observation, written)

    def apply_saved(self, observation: signals.QuotaObserved) -> bool:
        """An observation another replica saved (SCALE-2): into the book, not written again."""
        return self.book.apply(observation)

    def invalidate(self, account_id: int, lifecycle_revision: int) -> None:
        """A new lifecycle (disable/enable, re-authorization): earlier observations stop counting."""
        self.book.invalidate(account_id, lifecycle_revision)
        with self._pending_lock:
            self._pending.pop(account_id, None)
        if self.refresher is not None:
            self.refresher.invalidate(account_id)
        with contextlib.suppress(RuntimeError):  # RuntimeError: shut down
            self._writer.submit(self._drop, account_id, lifecycle_revision)

    def forget(self, account_id: int) -> None:
        """The account was deleted (its rows cascade)."""
        self.book.forget(account_id)
        with self._pending_lock:
            self._pending.pop(account_id, None)
        if self.refresher is not None:
            self.refresher.invalidate(account_id)

    # -- what selection asks (the scheduler's SubscriptionQuota) -----------------------------------

    def exhausted_until(self, account_id: int, model: str) -> float | None:
        """When to look again if a fresh observation says the account is out of quota for ``model``."""
        return self.book.exhausted_until(account_id, model)

    def remaining(self, account_id: int, model: str) -> float | None:
        """The remaining fraction of the account's most constrained fresh main window (QW-1)."""
        return self.book.remaining(account_id, model)

    def demand(self, account_id: int, provider: str, lifecycle_revision: int) -> None:
        """Model traffic considered the account: refresh its quota in the background if due (QUOTA-1)."""
        if self.refresher is not None:
            self.refresher.demand(account_id, provider, lifecycle_revision)

    # -- internals --------------------------------------------------------------------------------

    def _repeats(self, observation: signals.QuotaObserved) -> bool:
        """Whether the observation says what the book already knows, and that is recent enough."""
        book, account_id = self.book, observation.account_id
        for window in observation.windows:
            seen = book.window(account_id, window.model, window.window)
            if seen is None or observation.observed_at - seen.observed_at >= self.rewrite_after_s:
                return False
            old = seen.window
            if (
                old.used_percent != window.used_percent
                or old.limit_reached != window.limit_reached
                or old.main != window.main
                or old.window_seconds != window.window_seconds
                or _second(old.resets_at) != _second(window.resets_at)
            ):
                return False
        return True

    def _submit(self, account_id: int) -> None:
        try:
            future = self._writer.submit(self._write_pending, account_id)
        except RuntimeError:  # shut down
            with self._pending_lock:
                self._pending.pop(account_id, None)
            return
        future.add_done_callback(self._written)

    def _write_pending(
        self, account_id: int
    ) -> tuple[signals.QuotaObserved | None, tuple[signals.QuotaWindow, ...]]:
        with self._pending_lock:
            observation = self._pending.pop(account_id, None)
        if observation is None:
            return None, ()
        return observation, self._write(observation)

    def _written(self, future: Future[_Written]) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        observation, written = future.result()
        loop = self._loop
        if observation is not None and written and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._publish, observation, written)

    def _write(self, observation: signals.QuotaObserved) -> tuple[signals.QuotaWindow, ...]:
        try:
            written = self.store.write(observation)
        except Exception as exc:  # STORE-4: logged sanitized; an unsaved observation is not published
            _log.error(
                "could not store the quota of account %s: %s", observation.account_id, type(exc).__name__
            )
            return ()
        if written:
            self.writes += 1
        return written

    def _drop(self, account_id: int, revision: int) -> None:
        try:
            self.store.drop_before(account_id, revision)
        except Exception as exc:
            _log.error("could not drop old quota rows of account %s: %s", account_id, type(exc).__name__)

    def _publish(self, observation: signals.QuotaObserved, written: tuple[signals.QuotaWindow, ...]) -> bool:
        if not written:
            return False
        saved = signals.QuotaObserved(
            account_id=observation.account_id,
            lifecycle_revision=observation.lifecycle_revision,
            observed_at=observation.observed_at,
            plan=observation.plan,
            windows=written,
        )
        applied = self.book.apply(saved)
        if applied and self.on_saved is not None:
            self.on_saved(saved)
        return applied


def _second(value: float | None) -> int | None:
    return None if value is None else round(value)
