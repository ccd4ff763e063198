from __future__ import annotations

import pytest

from sublane_core import FakeClock, ShiftedClock, SystemClock


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock(wall=100.0, monotonic=5.0)
    assert (clock.time(), clock.monotonic()) == (100.0, 5.0)
    clock.advance(2.5)
    assert (clock.time(), clock.monotonic()) == (102.5, 7.5)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)


def test_system_clock_monotonic_never_goes_back() -> None:
    clock = SystemClock()
    first = clock.monotonic()
    assert clock.monotonic() >= first
    assert clock.time() > 1_700_000_000


def test_shifted_clock_flows_and_jumps() -> None:
    clock = ShiftedClock()
    before = clock.time()
    clock.advance(3600)
    assert clock.time() - before >= 3600
    first = clock.monotonic()
    assert clock.monotonic() >= first
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
