"""Writing request records off the hot path (HIST-1, HIST-2, HIST-6, WAIT-7).

:meth:`HistoryRecorder.record` is the ``request_finished`` receiver. It runs on the event loop of the
request that ended, before that request's slot is handed on, and only puts the payload on a bounded
queue: no database call, no serialization, no waiting. One writer thread takes the queue in order,
inserts what it finds in one transaction per batch and applies retention in the same transaction.
The same transaction adds the batch to the usage summaries (TEAM-3, :class:`UsageWriter`), so a
summary holds exactly the attempts whose records were written. A failed write is logged
(sanitized, STORE-4) and never reaches a request.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Final, TypeAlias

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import AlertOutbox, Clock, background_thread_begins, signals
from sublane_history._costs import CostLedger, RecordCosts
from sublane_history._retention import Retention, apply_retention
from sublane_history._rows import INSERT_RECORDS, record_values
from sublane_history._usage import UsageWriter

_log = logging.getLogger("sublane.history")

QUEUE_SIZE = 10_000
BATCH_SIZE = 500
# The writer wakes this often (or at once when a batch fills, or when a reader flushes), so the
# request path never pays for waking a thread: appending to a deque is all it does (profiled in
# BENCHMARKS.md). Every batch pays a commit and a few statements whatever its size: at ~440 calls/s
# 100 ms (~44 records a batch) costs the writer about a quarter less CPU per record than 50 ms did.
WRITE_INTERVAL_S = 0.1
#: Writes hurried by :meth:`HistoryRecorder.written` start at least this far apart, so a replica
#: waiting for records writes them in batches of this long, not a transaction per call.
HURRIED_SPACING_S = 0.01
# HIST-1: a workspace admission rejection (ADM-2) is refused before scheduling and is not recorded.
NOT_RECORDED_REJECTIONS: Final = frozenset({"workspace_busy"})

RETRY_INITIAL_S = 0.05
RETRY_MAX_S = 2.0
RETRY_ON_CLOSE = 5  # attempts once close() was asked for, so shutting down stays bounded
_DROP_LOG_EVERY = 1000
#: ALERT-2: ``history.dropped`` at most this often.
LOSS_ALERT_EVERY_S = 600.0


class _Stop:
    """Tells the writer thread to finish after what is queued before it."""


_STOP: Final = _Stop()
RequestFinished = signals.RequestFinished
_Item: TypeAlias = "RequestFinished | threading.Event | _Stop | _Written"


class _Written:
    """A coroutine's marker in the queue: told (on its loop) once what came before is written."""

    __slots__ = ("done", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> None:
        self.loop = loop
        self.done = done

    def tell(self) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._set)

    def _set(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class HistoryRecorder:
    """Queues finished attempts on the request path and writes them from one background thread.

    Start it inside the app's event loop: it then ignores payloads sent from other event loops
    (several gateways in one test process share the signal bus). Payloads sent from a thread with
    no event loop are always taken.

    ``records=False`` writes no request records (``SUBLANE_HISTORY_ENABLED=false``); ``usage``
    adds every written attempt to the usage summaries (``None``: no summaries); ``costs`` prices
    every attempt as it is written (COST-2; ``None``: every cost unknown); ``ledger`` adds the
    costs to its own tables in the same transaction (PAID-3's metered spend).
    """

    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        retention: Retention | None = None,
        *,
        queue_size: int = QUEUE_SIZE,
        batch_size: int = BATCH_SIZE,
        records: bool = True,
        usage: UsageWriter | None = None,
        outbox: AlertOutbox | None = None,
        costs: RecordCosts | None = None,
        ledger: CostLedger | None = None,
    ) -> None:
        self._ledger = ledger  # PAID-3: the metered spend, added in the records' transaction
        self._costs = costs  # COST-2: each record's cost, asked here in the writer thread
        self._outbox = outbox  # ALERT-2: history.dropped
        self._told_lost = 0  # lost records an alert already told of
        self._told_at: float | None = None
        self._engine = engine
        self._records = records
        self.usage = usage
        self._clock = clock
        self.retention = retention or Retention()
        self._pending: deque[_Item] = deque()
        self._max_pending = queue_size
        self._wake = threading.Event()
        self._batch_size = batch_size
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self.dropped = 0  # payloads refused because the queue was full
        self.failed = 0  # records whose write failed

    @property
    def backlog(self) -> int:
        """Records queued and not yet written (OPS-8); the queue holds at most ``queue_size``."""
        return len(self._pending)

    # -- the request path ------------------------------------------------------------------------

    def record(self, payload: RequestFinished) -> None:
        """Queue ``payload`` for writing. Never blocks; when the queue is full the record is dropped."""
        if self._loop is not None:
            try:
                running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not None and running is not self._loop:
                return
        if payload.outcome == "rejected" and payload.error_code in NOT_RECORDED_REJECTIONS:
            return
        pending = self._pending
        if len(pending) >= self._max_pending:
            self.dropped += 1
            if self.dropped % _DROP_LOG_EVERY == 1:
                _log.warning("history queue full: %d request record(s) dropped so far", self.dropped)
            return
        pending.append(payload)  # deque appends are atomic: no lock, no thread wake-up
        if len(pending) >= self._batch_size:
            self._wake.set()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread (once)."""
        if self._thread is not None:
            return
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._thread = threading.Thread(target=self._run, name="sublane-history-writer", daemon=True)
        self._thread.start()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything queued so far has been written (or has failed); ``False`` on timeout.

        Blocks: call it from a worker thread, never from the event loop.
        """
        thread = self._thread
        if thread is None or not thread.is_alive():
            return not self._pending
        marker = threading.Event()
        self._pending.append(marker)
        self._wake.set()
        return marker.wait(timeout)

    async def written(self) -> None:
        """Until everything queued so far has been written (or has failed), without blocking the
        loop; the writer starts at once instead of at its next interval (what queued meanwhile is
        written in the same transaction). A replica gives a call's shared slot back only after its
        record is in the database (SCALE-3)."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append(_Written(loop, done))
        self._wake.set()
        await done

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop the writer thread. Blocks, like :meth:`flush`."""
        thread = self._thread
        if thread is None:
            return
        self._closing = True
        self._pending.append(_STOP)
        self._wake.set()
        thread.join(timeout)
        if thread.is_alive():
            _log.error("history writer did not drain its queue in time; stopping without it")
        self._thread = None

    # -- the writer ------------------------------------------------------------------------------

    def write(self, payloads: Sequence[RequestFinished]) -> None:
        """Insert ``payloads``, add them to the usage summaries and apply retention, in one
        transaction (the writer thread's step, on a connection of its own).

        Raises what the database raises; the writer thread logs it instead.
        """
        with self._engine.connect() as connection:
            self._write(connection, payloads)

    def _write(self, connection: sa.Connection, payloads: Sequence[RequestFinished]) -> None:
        now = self._clock.time()
        told: tuple[int, str | None] | None = None
        costs = self._costs_of(payloads)
        try:
            with connection.begin():
                if self._records:
                    if payloads:
                        rows = [
                            record_values(payload, cost)
                            for payload, cost in zip(payloads, costs, strict=True)
                        ]
                        INSERT_RECORDS.execute(connection, rows)
                    apply_retention(connection, self.retention, now)
                if self.usage is not None and payloads:
                    self.usage.add(connection, payloads, now, costs)
                if self._ledger is not None and payloads:
                    self._ledger.add(connection, payloads, costs)
                told = self._tell_losses(connection, now)
        except BaseException:
            if self.usage is not None:
                self.usage.forget()  # what it remembered of this transaction was rolled back
            if self._ledger is not None:
                self._ledger.rolled_back()
            raise
        if self._ledger is not None:
            self._ledger.committed()
        if told is not None and self._outbox is not None:
            self._told_lost, self._told_at = told[0], now
            if told[1] is not None:  # an event was written: deliver it now
                self._outbox.added()

    def _costs_of(self, payloads: Sequence[RequestFinished]) -> list[float | None]:
        """Each attempt's cost now (COST-2); a failing price book costs the costs, never the records."""
        costs = self._costs
        if costs is None:
            return [None] * len(payloads)
        try:
            return [
                costs.cost_usd(payload) if payload.account_id is not None else 0.0 for payload in payloads
            ]
        except Exception as exc:
            _log.error("could not price %d request record(s): %s", len(payloads), type(exc).__name__)
            return [None] * len(payloads)

    def _tell_losses(self, connection: sa.Connection, now: float) -> tuple[int, str | None] | None:
        """ALERT-2 ``history.dropped``, in the next transaction that writes records after some were
        lost (queue full or unwritable), at most once per ``LOSS_ALERT_EVERY_S``; the lost count
        it told and the event's id (``None``: no webhook wanted it), or ``None``."""
        lost = self.dropped + self.failed
        if self._outbox is None or lost <= self._told_lost:
            return None
        if self._told_at is not None and now - self._told_at < LOSS_ALERT_EVERY_S:
            return None
        data = {"dropped": lost - self._told_lost, "dropped_total": lost}
        return lost, self._outbox.add(connection, "history.dropped", data)

    def _run(self) -> None:
        background_thread_begins()  # the loop first, where the process asked (issue #49)
        pending = self._pending
        held = _HeldConnection(self._engine)
        last_write = float("-inf")
        try:
            while True:
                if not pending:
                    self._wake.wait(WRITE_INTERVAL_S)
                    self._wake.clear()
                early = last_write + HURRIED_SPACING_S - time.monotonic()
                if early > 0 and not self._closing:
                    time.sleep(early)  # what else comes meanwhile joins this transaction
                last_write = time.monotonic()
                items: list[_Item] = []
                while pending and len(items) < self._batch_size:
                    items.append(pending.popleft())
                if not items:
                    continue
                batch = [item for item in items if isinstance(item, RequestFinished)]
                if batch:
                    self._write_safely(batch, held)
                stop = False
                for item in items:
                    if isinstance(item, threading.Event):
                        item.set()
                    elif isinstance(item, _Written):
                        item.tell()
                    elif isinstance(item, _Stop):
                        stop = True
                if stop:
                    return
        finally:
            held.drop()

    def _write_safely(self, batch: list[RequestFinished], held: _HeldConnection | None = None) -> None:
        """Write ``batch``: a busy database is waited out with backoff (OPS-2); a bad row costs itself.

        ``held``: the writer thread's connection (without it, each try checks one out of the pool).
        """
        delay = RETRY_INITIAL_S
        attempts = 0
        while True:
            try:
                self._write_once(batch, held)
                return
            except sa.exc.OperationalError as exc:
                if not _transient(exc):
                    break
                # Locked, busy or briefly failing: keep the batch and try again. New records queue
                # behind it up to the bounded backlog; what falls past that is counted in ``dropped``.
                attempts += 1
                if self._closing and attempts > RETRY_ON_CLOSE:
                    self.failed += len(batch)
                    _log.error(
                        "could not store %d request record(s) before stopping: %s",
                        len(batch),
                        type(exc).__name__,
                    )
                    return
                if attempts == 1 or attempts % 20 == 0:
                    _log.warning(
                        "history write failed (%s); retrying %d record(s)", type(exc).__name__, len(batch)
                    )
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
            except Exception:
                break
        # One bad row (a repeated request ID, text the driver refuses) must not cost the others.
        lost = 0
        reason = ""
        for payload in batch:
            try:
                self._write_once([payload], held)
            except Exception as exc:
                lost += 1
                reason = type(exc).__name__
        if lost:
            self.failed += lost
            _log.error("could not store %d request record(s): %s", lost, reason)

    def _write_once(self, batch: list[RequestFinished], held: _HeldConnection | None) -> None:
        """One try at :meth:`write`, on ``held`` when given (dropped if the try fails)."""
        if held is None:
            self.write(batch)
            return
        try:
            self._write(held.connection(), batch)
        except BaseException:
            held.drop()  # whatever went wrong, the next try starts on a fresh connection
            raise


class _HeldConnection:
    """The writer thread's connection, kept from one batch to the next: checking one out of the pool
    and handing it back cost as much as inserting a small batch. Idle between batches, it holds no
    transaction, so it keeps no snapshot and blocks no checkpoint."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._connection: sa.Connection | None = None

    def connection(self) -> sa.Connection:
        if self._connection is None:
            self._connection = self._engine.connect()
        return self._connection

    def drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception as exc:  # a broken connection cannot stop the writer
                _log.warning("could not close the history writer's connection: %s", type(exc).__name__)


def _transient(exc: sa.exc.OperationalError) -> bool:
    """A database that is locked, busy or briefly unreachable: worth waiting for (OPS-2)."""
    text = str(exc.orig).lower()
    return any(word in text for word in ("locked", "busy", "i/o", "unable to open"))
