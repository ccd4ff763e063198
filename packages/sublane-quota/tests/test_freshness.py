"""QUOTA-3 freshness and QUOTA-10 pace, exactly and as invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_core import signals
from sublane_quota import FRESH_S, fresh_until, is_exhausted, is_fresh, pace_points

NOW = 1_800_000_000.0


def window(used: float | None, *, reached: bool = False) -> signals.QuotaWindow:
    return signals.QuotaWindow("primary", used, 18000, NOW + 3600, limit_reached=reached)


def test_quota_3_an_observation_is_fresh_for_two_minutes() -> None:
    assert is_fresh(NOW, None, NOW + FRESH_S - 0.001)
    assert not is_fresh(NOW, None, NOW + FRESH_S)


def test_quota_3_a_reset_shortens_freshness() -> None:
    assert fresh_until(NOW, NOW + 30) == NOW + 30
    assert not is_fresh(NOW, NOW + 30, NOW + 30)
    assert fresh_until(NOW, NOW + 3600) == NOW + FRESH_S


def test_quota_3_future_dated_and_already_reset_data_is_not_fresh() -> None:
    assert not is_fresh(NOW + 60, None, NOW)  # observed a minute from now: not believed
    assert not is_fresh(NOW, NOW - 1, NOW)  # its window already reset


def test_quota_3_denial_reached_flag_or_full_main_window_is_exhausted() -> None:
    assert is_exhausted(window(100.0))
    assert is_exhausted(window(None, reached=True))
    assert not is_exhausted(window(99.9))
    assert not is_exhausted(window(None))  # unknown never means zero


def test_quota_10_pace_at_observation_time() -> None:
    # half of a 5 h window gone, 70 % used: 20 points ahead
    assert pace_points(70.0, 18000, NOW + 9000, NOW) == 20.0
    assert pace_points(10.0, 18000, NOW + 9000, NOW) == -40.0


def test_quota_10_pace_is_hidden_when_incomplete() -> None:
    assert pace_points(None, 18000, NOW + 9000, NOW) is None
    assert pace_points(50.0, None, NOW + 9000, NOW) is None
    assert pace_points(50.0, 18000, None, NOW) is None
    assert pace_points(50.0, 18000, NOW + 20000, NOW) is None  # outside its own window


@settings(max_examples=300, deadline=None)
@given(
    observed=st.floats(-1e4, 1e4),
    reset=st.none() | st.floats(-1e4, 1e4),
    now=st.floats(-1e4, 1e4),
)
def test_quota_3_freshness_never_outlives_two_minutes_or_the_reset(
    observed: float, reset: float | None, now: float
) -> None:
    if is_fresh(NOW + observed, None if reset is None else NOW + reset, NOW + now):
        assert NOW + now - (NOW + observed) < FRESH_S
        assert reset is None or now < reset
