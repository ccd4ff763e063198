"""Admission before any account is chosen (ADM-2, ADM-3, ADM-4).

A :class:`Ticket` counts one operation against the workspace capacity and, for model requests,
against the member's concurrency, from admission until it is closed (exactly once) — waiting
included (WAIT-4). A member's requests-per-minute allowance is consumed once, at admission, never
again on wake-ups. It counts fixed UTC-minute windows (TEAM-1): the allowance comes back whole at
every full minute of the wall clock, so a member can tell when without knowing when they called.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sublane_core import Clock, SubLaneError

RPM_WINDOW_S = 60.0


class Ticket:
    """One admitted operation. :meth:`close` gives its place back, once."""

    __slots__ = ("_admission", "_closed", "then", "user_id")

    def __init__(self, admission: Admission, user_id: int | None) -> None:
        self._admission = admission
        self.user_id = user_id
        self._closed = False
        #: Run once at close: a replica gives the member's shared place back (SCALE-2).
        self.then: Callable[[], None] | None = None

    def close(self) -> bool:
        if self._closed:
            return False
        self._closed = True
        self._admission._leave(self.user_id)
        if self.then is not None:
            self.then()
        return True


class Admission:
    """Workspace capacity, member concurrency and member RPM, all process-local."""

    def __init__(self, clock: Clock, capacity: int) -> None:
        self._clock = clock
        self.capacity = capacity
        self.in_use = 0
        self._members: dict[int, int] = {}
        self._minutes: dict[int, tuple[int, int]] = {}  # user -> (UTC minute, calls admitted in it)

    def member_in_use(self, user_id: int) -> int:
        return self._members.get(user_id, 0)

    def enter(self, user_id: int, member_limit: int, rpm: int) -> Ticket:
        """Admit a model request of ``user_id`` (limits: 0 = unlimited), or refuse with a 429."""
        if self.in_use >= self.capacity:
            raise SubLaneError("workspace_busy", retry_after=1)
        if member_limit and self._members.get(user_id, 0) >= member_limit:
            raise SubLaneError("member_busy", retry_after=1)
        if rpm:
            now = self._clock.time()
            minute = math.floor(now / RPM_WINDOW_S)
            counted, calls = self._minutes.get(user_id, (minute, 0))
            if counted != minute:
                calls = 0
            if calls >= rpm:
                retry_after = (minute + 1) * RPM_WINDOW_S - now  # until the next UTC minute begins
                raise SubLaneError("member_rate_limited", retry_after=max(1.0, retry_after))
            self._minutes[user_id] = (minute, calls + 1)
        self.in_use += 1
        self._members[user_id] = self._members.get(user_id, 0) + 1
        return Ticket(self, user_id)

    def enter_metadata(self) -> Ticket:
        """Admit a shared metadata read (quota, discovery, verification): workspace capacity only (ADM-10)."""
        if self.in_use >= self.capacity:
            raise SubLaneError("workspace_busy", retry_after=1)
        self.in_use += 1
        return Ticket(self, None)

    def _leave(self, user_id: int | None) -> None:
        self.in_use -= 1
        if user_id is not None:
            left = self._members.get(user_id, 0) - 1
            if left > 0:
                self._members[user_id] = left
            else:
                self._members.pop(user_id, None)
