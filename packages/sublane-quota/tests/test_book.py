"""What selection reads from the book: exclusion by fresh main windows (QUOTA-3/4), remaining (QW-2)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_core import FakeClock, signals
from sublane_quota import FRESH_S, QuotaBook, quota_model
from sublane_quota._freshness import FUTURE_TOLERANCE_S, is_exhausted


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


def _read_afresh(book: QuotaBook, account: int, model: str, now: float) -> tuple[float | None, float | None]:
    """QUOTA-3/4 and QW-2 read straight from the windows, as the book answered before it remembered."""
    native = quota_model(model) if model else model
    counting = [
        seen
        for seen in book.windows(account)
        if seen.window.main
        and seen.window.model in ("", native)
        and seen.observed_at <= now + FUTURE_TOLERANCE_S
        and now < seen.fresh_until
    ]
    deadlines = [seen.fresh_until for seen in counting if is_exhausted(seen.window)]
    used = [seen.window.used_percent for seen in counting]
    remaining = (
        None
        if not used or any(value is None for value in used)
        else min(max(0.0, min(1.0, 1.0 - value / 100.0)) for value in used if value is not None)
    )
    return (min(deadlines) if deadlines else None), remaining


_steps = st.one_of(
    st.tuples(
        st.just("observe"),
        st.integers(1, 2),  # account
        st.floats(-200, 200),  # observed this far from now
        st.sampled_from(["", "gemini-3-pro-high", "gemini-3-flash"]),  # the window's model
        st.sampled_from(["primary", "secondary"]),
        st.none() | st.sampled_from([0.0, 40.0, 99.9, 100.0]),
        st.none() | st.floats(-100, 400),  # resets this far from the observation
        st.booleans(),  # main
    ),
    st.tuples(st.just("wait"), st.floats(-30, 200)),  # mostly forward; a wall clock may step back
)


class _SteppingClock(FakeClock):
    """A wall clock that NTP may also set back."""

    def step(self, seconds: float) -> None:
        self._wall += seconds


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(_steps, max_size=25))
def test_quota_3_remembered_answers_equal_a_fresh_reading(steps: list[tuple[Any, ...]]) -> None:
    """Selection asks the book per account per request; its remembered answers must be exactly
    what reading every window afresh says, whatever observations arrive and however time moves."""
    clock = _SteppingClock()
    book = QuotaBook(clock)
    models = ["gpt-5", "gemini-3-pro(high)", "gemini-3-flash", ""]
    for step in steps:
        if step[0] == "wait":
            clock.step(step[1])
        else:
            _, account, offset, model, name, used, reset_in, main = step
            at = clock.time() + offset
            reset = None if reset_in is None else at + reset_in
            book.apply(
                observed(account, at, signals.QuotaWindow(name, used, 18000, reset, main=main, model=model))
            )
        now = clock.time()
        for account in (1, 2, 3):
            for model in models:
                expected = _read_afresh(book, account, model, now)
                assert (book.exhausted_until(account, model), book.remaining(account, model)) == expected
