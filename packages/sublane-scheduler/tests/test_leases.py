"""The lease table: atomic take (ADM-5), release exactly once (ADM-6), limits read at take (ADM-7)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sublane_core import signals
from sublane_scheduler import LeaseTable


@pytest.fixture
def released() -> Iterator[list[signals.LeaseReleased]]:
    seen: list[signals.LeaseReleased] = []
    disconnect = signals.lease_released.connect(seen.append)
    yield seen
    disconnect()


def test_adm_5_two_requests_never_take_one_last_slot() -> None:
    table = LeaseTable()
    first = table.try_acquire(1, 2, "a", "gpt-5")
    last = table.try_acquire(1, 2, "b", "gpt-5")
    assert first is not None and last is not None
    assert table.try_acquire(1, 2, "c", "gpt-5") is None
    assert table.in_flight(1) == 2
    assert table.in_flight(2) == 0  # other accounts are counted apart
    assert table.try_acquire(2, 1, "d", "gpt-5") is not None


def test_adm_6_a_lease_is_released_exactly_once(released: list[signals.LeaseReleased]) -> None:
    table = LeaseTable()
    lease = table.try_acquire(7, 1, "req-1", "gpt-5")
    assert lease is not None and not lease.released
    assert lease.release("completed") is True
    assert lease.released
    for outcome in ("canceled", "upstream_error", "completed"):  # whatever else ends it later
        assert lease.release(outcome) is False
    assert table.in_flight(7) == 0 and table.total_in_flight() == 0
    assert (table.acquired_total, table.released_total) == (1, 1)
    assert released == [
        signals.LeaseReleased(request_id="req-1", account_id=7, model="gpt-5", outcome="completed")
    ]
    assert table.try_acquire(7, 1, "req-2", "gpt-5") is not None  # the slot is free again


def test_adm_6_release_never_takes_another_lease_s_slot() -> None:
    table = LeaseTable()
    first = table.try_acquire(1, 2, "a", "gpt-5")
    second = table.try_acquire(1, 2, "b", "gpt-5")
    assert first is not None and second is not None
    first.release("completed")
    first.release("completed")
    first.release("completed")
    assert table.in_flight(1) == 1  # the double releases did not free the second lease's slot
    assert table.in_flight_model(1, "gpt-5") == 1


def test_in_flight_is_counted_per_account_and_per_model() -> None:
    table = LeaseTable()
    leases = [
        table.try_acquire(1, 5, "a", "gpt-5"),
        table.try_acquire(1, 5, "b", "gpt-5-mini"),
        table.try_acquire(1, 5, "c", "gpt-5"),
        table.try_acquire(2, 5, "d", "gpt-5"),
    ]
    assert all(lease is not None for lease in leases)
    assert table.in_flight(1) == 3 and table.in_flight(2) == 1 and table.total_in_flight() == 4
    assert table.in_flight_model(1, "gpt-5") == 2 and table.in_flight_model(1, "gpt-5-mini") == 1
    for lease in leases:
        assert lease is not None
        lease.release("completed")
    assert table.total_in_flight() == 0 and table.in_flight_model(1, "gpt-5") == 0


def test_release_callbacks_run_after_each_release_with_the_slot_already_free() -> None:
    table = LeaseTable()
    seen: list[tuple[int, int]] = []
    table.on_release(lambda account_id: seen.append((account_id, table.in_flight(account_id))))
    lease = table.try_acquire(3, 1, "a", "gpt-5")
    assert lease is not None
    lease.release("completed")
    lease.release("completed")
    assert seen == [(3, 0)]  # once, and a waiter woken by it can take the slot


def test_lease_acquired_is_signalled_with_the_request() -> None:
    table = LeaseTable()
    seen: list[signals.LeaseAcquired] = []
    disconnect = signals.lease_acquired.connect(seen.append)
    try:
        table.try_acquire(4, 1, "req-9", "gpt-5")
        table.try_acquire(4, 1, "req-10", "gpt-5")  # refused: no signal
    finally:
        disconnect()
    assert seen == [signals.LeaseAcquired(request_id="req-9", account_id=4, model="gpt-5")]


def test_adm_7_a_lowered_limit_keeps_running_leases_and_refuses_new_ones() -> None:
    table = LeaseTable()
    leases = [table.try_acquire(1, 3, f"r{index}", "gpt-5") for index in range(3)]
    assert all(lease is not None for lease in leases)
    assert table.try_acquire(1, 1, "new", "gpt-5") is None  # the limit is now 1: three still run
    for lease in leases[:2]:
        assert lease is not None
        lease.release("completed")
    assert table.try_acquire(1, 1, "new", "gpt-5") is None  # usage 1 is not below the new limit
    assert leases[2] is not None
    leases[2].release("completed")
    assert table.try_acquire(1, 1, "new", "gpt-5") is not None
