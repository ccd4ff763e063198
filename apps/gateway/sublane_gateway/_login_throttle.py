"""OPS-4: repeated failed sign-ins are slowed per user name and per client address.

Every failed try costs an Argon2 hash, unauthenticated. After ``SUBLANE_LOGIN_FAILURES_MAX``
failures within ``SUBLANE_LOGIN_FAILURE_WINDOW_S`` for a name or an address, further tries are
answered 429 ``too_many_attempts`` with ``Retry-After`` *before* any hash is computed. Kept in
memory (bounded), per process; a successful sign-in clears its name's failures.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque

from sublane_core import Clock, SubLaneError

MAX_TRACKED = 10_000  # names and addresses remembered at most; the oldest are forgotten first


class LoginThrottle:
    """Counts failed sign-ins per key (``user:<name>``, ``addr:<ip>``) in a sliding window."""

    def __init__(self, clock: Clock, max_failures: int, window_s: float) -> None:
        self._clock = clock
        self._max = max_failures
        self._window = window_s
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()  # sign-in runs in FastAPI's worker threads

    @staticmethod
    def keys(username: str, address: str | None) -> tuple[str, ...]:
        """The throttle keys of one try."""
        name = f"user:{username.strip().lower()[:256]}"
        return (name, f"addr:{address}") if address else (name,)

    def check(self, keys: tuple[str, ...]) -> None:
        """Raise 429 ``too_many_attempts`` when any key has used up its failures."""
        now = self._clock.monotonic()
        wait = 0.0
        with self._lock:
            for key in keys:
                times = self._recent(key, now)
                if times is not None and len(times) >= self._max:
                    wait = max(wait, times[0] + self._window - now)
        if wait > 0:
            raise SubLaneError("too_many_attempts", retry_after=max(1.0, wait))

    def failed(self, keys: tuple[str, ...]) -> None:
        """Count a failed try against every key."""
        now = self._clock.monotonic()
        with self._lock:
            for key in keys:
                times = self._recent(key, now)
                if times is None:
                    times = self._failures[key] = deque(maxlen=self._max)
                times.append(now)
                self._failures.move_to_end(key)
            while len(self._failures) > MAX_TRACKED:
                self._failures.popitem(last=False)

    def succeeded(self, username: str) -> None:
        """A successful sign-in clears its name's failures (not the address's)."""
        with self._lock:
            self._failures.pop(self.keys(username, None)[0], None)

    def _recent(self, key: str, now: float) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self._window:
            times.popleft()
        return times


class SessionGuesses:
    """OPS-4 (guesses): a password or code checked for a signed-in user (password change, TOTP
    disable, a recovery code) is throttled like sign-in, under the same keys (the user's name and
    the client address), so a stolen session cannot try passwords at Argon2's pace either: past the
    limit the answer is 429 ``too_many_attempts`` *before* the hash."""

    def __init__(self, throttle: LoginThrottle | None, username: str, address: str | None) -> None:
        self._throttle = throttle
        self._username = username
        self._keys = LoginThrottle.keys(username, address)
        if throttle is not None:
            throttle.check(self._keys)

    def failed(self) -> None:
        """Count one wrong password or code."""
        if self._throttle is not None:
            self._throttle.failed(self._keys)

    def succeeded(self) -> None:
        """The secret was right: the name's failures are cleared, as after a sign-in."""
        if self._throttle is not None:
            self._throttle.succeeded(self._username)
