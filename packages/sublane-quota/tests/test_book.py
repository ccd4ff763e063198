"""What selection reads from the book: exclusion by fresh main windows (QUOTA-3/4), remaining (QW-2)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_core import FakeClock, signals
from sublane_quota import FRESH_S, QuotaBook


def observed(
    account: int, at: float, *windows: signals.QuotaWindow, revision: int = 1
) -> signals.QuotaObserved:
    return signals.QuotaObserved(
        account_id=account, lifecycle_revision=revision, observed_at=at, plan="plus", windows=windows
    )


def w(
    name: str,
    used: float | None,
    *,
    main: bool = True,
    model: str = "",
    reset: float | None = None,
    reached: bool = False,
) -> signals.QuotaWindow:
    return signals.QuotaWindow(name, used, 18000, reset, limit_reached=reached, main=main, model=model)


def test_quota_3_a_fresh_full_main_window_excludes_until_its_freshness_ends() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    book.apply(observed(1, now, w("primary", 100.0, reset=now + 3600), w("secondary", 40.0)))
    assert book.exhausted_until(1, "gpt-5") == now + FRESH_S
    clock.advance(FRESH_S)
    assert book.exhausted_until(1, "gpt-5") is None  # stale: never zero quota


def test_quota_3_a_reset_ends_the_exclusion_early() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    book.apply(observed(1, now, w("primary", 100.0, reset=now + 30)))
    assert book.exhausted_until(1, "gpt-5") == now + 30
    clock.advance(30)
    assert book.exhausted_until(1, "gpt-5") is None


def test_quota_3_future_dated_observations_do_not_exclude() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    book.apply(observed(1, clock.time() + 600, w("primary", 100.0)))
    assert book.exhausted_until(1, "gpt-5") is None


def test_quota_4_additional_limits_never_exclude() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    book.apply(observed(1, clock.time(), w("primary", 10.0), w("bengalfox:primary", 100.0, main=False)))
    assert book.exhausted_until(1, "gpt-5") is None


def test_quota_4_antigravity_counts_only_the_exact_model() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    book.apply(
        observed(
            3,
            clock.time(),
            w("gemini-3-pro-high", 100.0, model="gemini-3-pro-high"),
            w("gemini-3-flash", 20.0, model="gemini-3-flash"),
        )
    )
    assert book.exhausted_until(3, "gemini-3-pro-high") is not None
    assert book.exhausted_until(3, "gemini-3-pro(high)") is not None  # the SDK suffix, normalized
    assert book.exhausted_until(3, "gemini-3-flash") is None
    assert book.exhausted_until(3, "gemini-3-pro-low") is None  # unknown model: never zero


def test_quota_8_older_observations_of_a_window_are_ignored() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    book.apply(observed(1, now, w("primary", 100.0)))
    book.apply(observed(1, now - 10, w("primary", 5.0)))  # a refresh that began earlier
    assert book.exhausted_until(1, "gpt-5") is not None


def test_quota_8_a_new_lifecycle_forgets_and_refuses_the_old_one() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    book.apply(observed(1, now, w("primary", 100.0)))
    book.invalidate(1, 2)
    assert book.exhausted_until(1, "gpt-5") is None
    assert not book.apply(observed(1, now + 1, w("primary", 100.0), revision=1))
    assert book.exhausted_until(1, "gpt-5") is None
    assert book.apply(observed(1, now + 1, w("primary", 100.0), revision=2))
    assert book.exhausted_until(1, "gpt-5") is not None


def test_qw_2_remaining_is_the_most_constrained_complete_main_window() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    book.apply(observed(1, now, w("primary", 25.0), w("secondary", 60.0), w("extra", 99.0, main=False)))
    assert book.remaining(1, "gpt-5") == 0.4
    book.apply(observed(2, now, w("primary", 25.0), w("secondary", None)))
    assert book.remaining(2, "gpt-5") is None  # incomplete: uniform rotation
    assert book.remaining(3, "gpt-5") is None  # never observed
    clock.advance(FRESH_S)
    assert book.remaining(1, "gpt-5") is None  # stale


@settings(max_examples=200, deadline=None)
@given(
    used=st.lists(st.none() | st.floats(0, 100), min_size=1, max_size=4),
    age=st.floats(-100, 400),
    reset_in=st.none() | st.floats(-100, 10_000),
)
def test_quota_3_exclusion_needs_a_fresh_exhausted_main_window(
    used: list[float | None], age: float, reset_in: float | None
) -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    reset = None if reset_in is None else now - age + reset_in
    windows = [w(f"w{i}", value, reset=reset) for i, value in enumerate(used)]
    book.apply(observed(1, now - age, *windows))
    until = book.exhausted_until(1, "gpt-5")
    fresh = -5 <= age < FRESH_S and (reset is None or now < reset)
    exhausted = any(value is not None and value >= 100 for value in used)
    assert (until is not None) == (fresh and exhausted)
    if until is not None:
        assert now < until <= now - age + FRESH_S


def test_one_window_is_read_by_model_and_name_as_last_observed() -> None:
    clock = FakeClock()
    book = QuotaBook(clock)
    now = clock.time()
    book.apply(observed(1, now, w("primary", 40.0), w("daily", 10.0, model="gemini-2.5-pro")))
    book.apply(observed(1, now + 1, w("primary", 45.0)))
    primary = book.window(1, "", "primary")
    assert primary is not None and primary.window.used_percent == 45.0 and primary.observed_at == now + 1
    assert book.window(1, "gemini-2.5-pro", "daily") is not None
    assert book.window(1, "", "daily") is None and book.window(2, "", "primary") is None
    assert sorted(o.window.window for o in book.windows(1)) == ["daily", "primary"]
