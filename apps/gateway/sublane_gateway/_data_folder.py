"""One SubLane per data folder: an exclusive lock held while a gateway serves it.

In-flight counts, waiting queues and cursors live in the process (single-writer design), so two
gateways on one database would each believe they own every account. The serving gateway holds an
advisory ``flock`` on ``sublane.lock`` in the data folder for as long as it runs; a second gateway
refuses to start, and ``sublane restore`` (OPS-9) refuses a folder that is being served. The kernel
drops the lock when the process ends, however it ends, so a crash never leaves a stale lock.

Replicas that share their limits through Redis (SCALE-2, SCALE-7) may serve one folder together:
each holds the lock *shared*, so they coexist while ``sublane restore`` and a gateway without Redis
(both exclusive) still refuse a folder in use.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

LOCK_NAME = "sublane.lock"


class DataFolderBusy(RuntimeError):
    """Another process holds the data folder."""


class DataFolderLock:
    """An exclusive, non-blocking lock on a data folder. Use as a context manager or acquire/release."""

    def __init__(self, data_dir: Path, *, shared: bool = False) -> None:
        self.path = data_dir / LOCK_NAME
        self.shared = shared
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`DataFolderBusy` at once when another process holds it."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataFolderBusy(
                f"{self.path.parent} is in use by a running SubLane (it holds {LOCK_NAME}); stop it first"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def acquire_and_release(self) -> None:
        """Check that nobody holds the folder now (raises :class:`DataFolderBusy`), keeping nothing."""
        self.acquire()
        self.release()

    def __enter__(self) -> DataFolderLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
