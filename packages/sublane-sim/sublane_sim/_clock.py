"""The simulator's wall clock, which tests can move forward without sleeping."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

__all__ = ["SimClock", "iso_utc"]


class SimClock:
    """Wall clock for token expiry, quota windows and WebSocket connection age.

    It follows real time from a movable offset: `advance(60)` makes every quota reset and token
    expiry one minute closer at once. Stream pacing deliberately uses real (event-loop) time, so
    advancing the clock never speeds up a running stream.
    """

    def __init__(self, start: float | None = None) -> None:
        self._lock = threading.Lock()
        self._offset = 0.0 if start is None else start - time.time()
        self._initial_offset = self._offset

    def now(self) -> float:
        """Current simulated Unix time in seconds."""
        return time.time() + self._offset

    def advance(self, seconds: float) -> float:
        """Move the clock forward (or back, with a negative value); returns the new time."""
        with self._lock:
            self._offset += seconds
        return self.now()

    def reset(self) -> None:
        """Undo every `advance`/`set` since construction."""
        with self._lock:
            self._offset = self._initial_offset

    def set(self, unix_seconds: float) -> None:
        """Jump to an absolute Unix time."""
        with self._lock:
            self._offset = unix_seconds - time.time()


def iso_utc(unix_seconds: float) -> str:
    """RFC 3339 timestamp with microseconds and an explicit `+00:00` offset."""
    return datetime.fromtimestamp(unix_seconds, tz=UTC).isoformat()
