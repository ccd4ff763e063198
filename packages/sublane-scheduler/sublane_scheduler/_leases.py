"""Account slots: the in-process lease table is the source of truth for in-flight counts.

Taking a slot is a check-and-increment with no ``await`` in between, so on the event loop no two
requests can both take an account's last slot (ADM-5). A :class:`Lease` is released exactly once,
whatever ends the request (ADM-6): a second release is a no-op that reports ``False``.
"""

from __future__ import annotations

from collections.abc import Callable

from sublane_core import signals


class Lease:
    """The right of one model request to use one account until its body closes."""

    __slots__ = ("_released", "_table", "account_id", "model", "request_id")

    def __init__(self, table: LeaseTable, account_id: int, request_id: str, model: str) -> None:
        self.account_id = account_id
        self.request_id = request_id
        self.model = model
        self._table = table
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self, outcome: str) -> bool:
        """Give the slot back; ``True`` the first time, ``False`` on every later call."""
        if self._released:
            return False
        self._released = True
        self._table._give_back(self, outcome)
        return True


class LeaseTable:
    """In-flight model requests per account, and the slots they hold."""

    def __init__(self) -> None:
        self._in_flight: dict[int, int] = {}
        self._by_model: dict[tuple[int, str], int] = {}
        self._on_release: list[Callable[[int], None]] = []
        self._on_give_back: list[Callable[[Lease], None]] = []
        self.acquired_total = 0
        self.released_total = 0

    def in_flight(self, account_id: int) -> int:
        return self._in_flight.get(account_id, 0)

    def in_flight_model(self, account_id: int, model: str) -> int:
        return self._by_model.get((account_id, model), 0)

    def total_in_flight(self) -> int:
        return sum(self._in_flight.values())

    def on_release(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(account_id)`` after each release (waiters are woken this way)."""
        self._on_release.append(callback)

    def on_give_back(self, callback: Callable[[Lease], None]) -> None:
        """Call ``callback(lease)`` after each release (a replica's shared slot is given back so)."""
        self._on_give_back.append(callback)

    def try_acquire(self, account_id: int, limit: int, request_id: str, model: str) -> Lease | None:
        """A lease when the account has a free slot under ``limit``, else ``None``. Never awaits."""
        current = self._in_flight.get(account_id, 0)
        if current >= limit:
            return None
        self._in_flight[account_id] = current + 1
        key = (account_id, model)
        self._by_model[key] = self._by_model.get(key, 0) + 1
        self.acquired_total += 1
        lease = Lease(self, account_id, request_id, model)
        if signals.lease_acquired.has_receivers:
            signals.lease_acquired.send(
                signals.LeaseAcquired(request_id=request_id, account_id=account_id, model=model)
            )
        return lease

    def _give_back(self, lease: Lease, outcome: str) -> None:
        remaining = self._in_flight.get(lease.account_id, 0) - 1
        if remaining > 0:
            self._in_flight[lease.account_id] = remaining
        else:
            self._in_flight.pop(lease.account_id, None)
        key = (lease.account_id, lease.model)
        left = self._by_model.get(key, 0) - 1
        if left > 0:
            self._by_model[key] = left
        else:
            self._by_model.pop(key, None)
        self.released_total += 1
        if signals.lease_released.has_receivers:
            signals.lease_released.send(
                signals.LeaseReleased(
                    request_id=lease.request_id,
                    account_id=lease.account_id,
                    model=lease.model,
                    outcome=outcome,
                )
            )
        for give_back in self._on_give_back:
            give_back(lease)
        for callback in self._on_release:
            callback(lease.account_id)
