"""Account and model cooldowns, the recovery probe and runtime revisions (COOL, MCOOL)."""

from __future__ import annotations

import logging
import math

import pytest

from sublane_core import ACCOUNT_WIDE, FakeClock
from sublane_scheduler import Cooldown, CooldownBook, CooldownPolicy

MODEL = "gpt-5"
OTHER = "gpt-5-mini"
A = 1


def book(clock: FakeClock, **policy: float) -> CooldownBook:
    return CooldownBook(clock, CooldownPolicy(**policy))  # type: ignore[arg-type]


def fail(cooldowns: CooldownBook, times: int, model: str = MODEL) -> Cooldown | None:
    cooldown = None
    for _ in range(times):
        cooldown = cooldowns.failed(A, model, cooldowns.revision(A))
    return cooldown


# -- COOL-1, COOL-2, COOL-3 ------------------------------------------------------------------------


@pytest.mark.parametrize("retry_after", [1, 30, 599.5, 3600])
def test_cool_1_a_429_cools_the_account_for_its_retry_after(clock: FakeClock, retry_after: float) -> None:
    cooldowns = book(clock)
    cooldown = cooldowns.rate_limited(A, retry_after)
    assert cooldown.until == clock.time() + retry_after and cooldown.model == ACCOUNT_WIDE
    assert cooldowns.active(A) is cooldown
    assert cooldowns.blocking(A, MODEL) is cooldown and cooldowns.blocking(A, OTHER) is cooldown
    clock.advance(retry_after - 0.01)
    assert cooldowns.active(A) is not None
    clock.advance(0.01)
    assert cooldowns.active(A) is None
    assert cooldowns.active(2) is None  # other accounts are not touched


@pytest.mark.parametrize("retry_after", [None, 0, 0.5, -3, 3600.5, 86400, math.nan, math.inf])
def test_cool_1_a_missing_or_invalid_retry_after_uses_the_fallback(
    clock: FakeClock, retry_after: float | None
) -> None:
    cooldowns = book(clock, fallback_s=7)
    assert cooldowns.rate_limited(A, retry_after).until == clock.time() + 7


def test_cool_2_transient_failures_never_cool_the_whole_account(clock: FakeClock) -> None:
    cooldowns = book(clock)
    fail(cooldowns, 20)
    assert cooldowns.active(A) is None
    assert cooldowns.blocking(A, OTHER) is None


@pytest.mark.parametrize(
    ("remaining", "hint"), [(0.2, 1.0), (1.0, 1.0), (42.5, 42.5), (3600, 3600.0), (7200, 3600.0)]
)
def test_cool_3_retry_after_is_the_remaining_cooldown_bounded(
    clock: FakeClock, remaining: float, hint: float
) -> None:
    cooldowns = book(clock)
    cooldown = Cooldown(A, ACCOUNT_WIDE, clock.time() + remaining, "rate_limited")
    cooldowns.restore(cooldown, 1)
    assert cooldowns.retry_after(cooldown) == hint


def test_cool_3_retry_after_shrinks_as_the_cooldown_runs(clock: FakeClock) -> None:
    cooldowns = book(clock)
    cooldown = cooldowns.rate_limited(A, 100)
    clock.advance(60)
    assert cooldowns.retry_after(cooldown) == 40
    clock.advance(39.5)
    assert cooldowns.retry_after(cooldown) == 1


def test_provider_model_limits_are_bounded_too(clock: FakeClock) -> None:
    cooldowns = book(clock, fallback_s=5)
    assert cooldowns.model_limited(A, MODEL, 10_000, "provider:quota").until == clock.time() + 3600
    assert cooldowns.model_limited(A, OTHER, None, "provider:quota").until == clock.time() + 5
    assert cooldowns.active(A) is None and cooldowns.blocking(A, "gpt-4.1") is None


# -- COOL-4 ----------------------------------------------------------------------------------------


def test_cool_4_an_expired_cooldown_waits_for_a_successful_probe(clock: FakeClock) -> None:
    cooldowns = book(clock)
    cooldowns.rate_limited(A, 10)
    assert not cooldowns.probe_only(A, MODEL)  # still cooling: nothing at all, not even a probe
    clock.advance(10)
    assert cooldowns.blocking(A, MODEL) is None
    assert cooldowns.probe_only(A, MODEL) and cooldowns.probe_only(A, OTHER)
    assert cooldowns.succeeded(A, MODEL, cooldowns.revision(A))
    assert not cooldowns.probe_only(A, MODEL) and not cooldowns.probe_only(A, OTHER)


def test_cool_4_a_failed_probe_cools_the_account_again(clock: FakeClock) -> None:
    cooldowns = book(clock, fallback_s=5)
    first = cooldowns.rate_limited(A, 10, "rate_limited")
    clock.advance(10)
    again = cooldowns.failed(A, MODEL, cooldowns.revision(A))
    assert again is not None and again.model == ACCOUNT_WIDE
    assert again.until == clock.time() + 5 and again.streak == first.streak + 1
    assert cooldowns.active(A) is again and not cooldowns.probe_only(A, MODEL)


def test_cool_4_a_success_does_not_end_a_cooldown_still_running(clock: FakeClock) -> None:
    cooldowns = book(clock)
    cooldowns.rate_limited(A, 10)
    clock.advance(5)
    assert cooldowns.succeeded(A, MODEL, cooldowns.revision(A))  # e.g. a stream from before the 429
    assert cooldowns.active(A) is not None


# -- COOL-5 ----------------------------------------------------------------------------------------


def test_cool_5_older_success_cannot_clear_newer_failure_same_tick(clock: FakeClock) -> None:
    cooldowns = book(clock)
    dispatched = cooldowns.revision(A)  # a long request starts…
    fail(cooldowns, 2)  # …two others fail meanwhile, at the same instant it succeeds
    assert cooldowns.succeeded(A, MODEL, dispatched) is False
    assert fail(cooldowns, 1) is not None  # the two failures still count: the third cools the model


def test_cool_5_older_success_cannot_end_a_newer_cooldown_s_probe(clock: FakeClock) -> None:
    cooldowns = book(clock)
    dispatched = cooldowns.revision(A)
    cooldowns.rate_limited(A, 1)
    clock.advance(1)
    assert cooldowns.succeeded(A, MODEL, dispatched) is False
    assert cooldowns.probe_only(A, MODEL)  # the account still needs its own recovery probe
    assert cooldowns.succeeded(A, MODEL, cooldowns.revision(A)) is True
    assert not cooldowns.probe_only(A, MODEL)


def test_cool_5_every_failure_and_rate_limit_advances_the_revision(clock: FakeClock) -> None:
    cooldowns = book(clock)
    seen = [cooldowns.revision(A)]
    cooldowns.failed(A, MODEL, seen[-1])
    seen.append(cooldowns.revision(A))
    cooldowns.rate_limited(A, None)
    seen.append(cooldowns.revision(A))
    cooldowns.model_limited(A, MODEL, None, "provider:x")
    seen.append(cooldowns.revision(A))
    assert seen == sorted(set(seen))
    assert cooldowns.revision(2) == 0


# -- COOL-6 ----------------------------------------------------------------------------------------


def test_cool_6_clear_resets_cooldowns_and_streaks_and_advances_the_revision(clock: FakeClock) -> None:
    cooldowns = book(clock)
    before = cooldowns.revision(A)
    cooldowns.rate_limited(A, 600)
    fail(cooldowns, 3)  # MODEL cools
    fail(cooldowns, 2, OTHER)  # OTHER has a streak of two
    cooldowns.rate_limited(2, 600)
    cooldowns.clear(A)
    assert cooldowns.revision(A) > before + 1
    assert cooldowns.active(A) is None and cooldowns.blocking(A, MODEL) is None
    assert cooldowns.limited_models(A) == [] and not cooldowns.probe_only(A, MODEL)
    assert fail(cooldowns, 2, OTHER) is None  # the streak started over
    assert cooldowns.rate_limited(A, None).streak == 1
    assert cooldowns.active(2) is not None  # other accounts keep theirs


def test_cool_6_outcomes_from_before_a_clear_are_outdated(clock: FakeClock) -> None:
    cooldowns = book(clock)
    dispatched = cooldowns.revision(A)
    cooldowns.clear(A)
    assert cooldowns.succeeded(A, MODEL, dispatched) is False


# -- COOL-7 ----------------------------------------------------------------------------------------


def test_cool_7_cooldowns_are_persisted_and_cleared_through_the_writer(clock: FakeClock) -> None:
    written: list[tuple[Cooldown | None, int, str, int]] = []
    cooldowns = CooldownBook(clock, CooldownPolicy(), persist=lambda *args: written.append(args))
    cooldown = cooldowns.rate_limited(A, 10)
    assert written == [(cooldown, A, ACCOUNT_WIDE, cooldowns.revision(A))]
    cooldowns.clear(A)
    assert written[-1][:3] == (None, A, ACCOUNT_WIDE)


def test_cool_7_a_failed_write_still_blocks_and_logs_sanitized(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: object) -> None:
        raise OSError("disk full at /secret/path token=sk-abc")

    cooldowns = CooldownBook(clock, CooldownPolicy(), persist=broken)
    with caplog.at_level(logging.ERROR, logger="sublane.cooldowns"):
        cooldowns.rate_limited(A, 30)
    assert cooldowns.active(A) is not None
    assert "OSError" in caplog.text and "sk-abc" not in caplog.text and "/secret" not in caplog.text


def test_cool_7_a_restored_cooldown_blocks_and_keeps_its_revision(clock: FakeClock) -> None:
    cooldowns = book(clock)
    cooldowns.restore(Cooldown(A, MODEL, clock.time() + 30, "model_failures", streak=2), 9)
    assert cooldowns.blocking(A, MODEL) is not None and cooldowns.blocking(A, OTHER) is None
    assert cooldowns.revision(A) == 9
    assert cooldowns.succeeded(A, MODEL, 8) is False


# -- MCOOL -----------------------------------------------------------------------------------------


def test_mcool_2_three_failures_in_window_cool_the_model_then_escalate(clock: FakeClock) -> None:
    cooldowns = book(clock)
    assert fail(cooldowns, 2) is None
    clock.advance(100)  # still inside the two-minute window
    first = fail(cooldowns, 1)
    assert first is not None and first.model == MODEL and first.until == clock.time() + 10
    durations = [10.0]
    for _ in range(7):  # each failed recovery request after expiry doubles it, up to 5 min
        clock.advance(durations[-1])
        assert cooldowns.blocking(A, MODEL) is None and cooldowns.probe_only(A, MODEL)
        again = fail(cooldowns, 1)
        assert again is not None
        durations.append(again.until - clock.time())
    assert durations == [10, 20, 40, 80, 160, 300, 300, 300]


def test_mcool_2_failures_outside_the_window_do_not_add_up(clock: FakeClock) -> None:
    cooldowns = book(clock)
    for _ in range(10):
        assert fail(cooldowns, 1) is None
        clock.advance(61)  # two failures per two minutes at most
    assert cooldowns.blocking(A, MODEL) is None


def test_mcool_2_threshold_window_and_duration_are_configurable(clock: FakeClock) -> None:
    cooldowns = book(clock, model_threshold=5, model_window_s=10, model_initial_s=2, model_max_s=3)
    assert fail(cooldowns, 4) is None
    clock.advance(10)  # the four fell out of the window
    assert fail(cooldowns, 4) is None
    first = fail(cooldowns, 1)
    assert first is not None and first.until == clock.time() + 2
    clock.advance(2)
    again = fail(cooldowns, 1)
    assert again is not None and again.until == clock.time() + 3


def test_mcool_2_threshold_0_disables_model_cooldown(clock: FakeClock) -> None:
    cooldowns = book(clock, model_threshold=0)
    assert fail(cooldowns, 50) is None
    assert cooldowns.blocking(A, MODEL) is None and cooldowns.limited_models(A) == []


def test_mcool_3_other_models_on_the_account_stay_eligible(clock: FakeClock) -> None:
    cooldowns = book(clock)
    cooldown = fail(cooldowns, 3)
    assert cooldowns.blocking(A, MODEL) is cooldown
    assert cooldowns.blocking(A, OTHER) is None and cooldowns.active(A) is None
    assert not cooldowns.probe_only(A, OTHER)
    assert cooldowns.limited_models(A) == [cooldown]
    assert cooldowns.blocking(2, MODEL) is None


def test_mcool_3_a_successful_recovery_request_clears_the_state(clock: FakeClock) -> None:
    cooldowns = book(clock)
    fail(cooldowns, 3)
    clock.advance(10)
    escalated = fail(cooldowns, 1)
    assert escalated is not None and escalated.until - clock.time() == 20
    clock.advance(20)
    assert cooldowns.succeeded(A, MODEL, cooldowns.revision(A))
    assert not cooldowns.probe_only(A, MODEL) and cooldowns.limited_models(A) == []
    assert fail(cooldowns, 2) is None  # the count and the escalation start over
    restarted = fail(cooldowns, 1)
    assert restarted is not None and restarted.until - clock.time() == 10


def test_mcool_3_late_results_cannot_clear_newer_failures(clock: FakeClock) -> None:
    cooldowns = book(clock)
    late = cooldowns.revision(A)
    fail(cooldowns, 3)
    clock.advance(10)
    assert cooldowns.succeeded(A, MODEL, late) is False
    assert cooldowns.probe_only(A, MODEL)  # still needs its own recovery request


def test_a_forgotten_account_leaves_nothing_behind(clock: FakeClock) -> None:
    cooldowns = book(clock)
    cooldowns.rate_limited(A, 30)
    fail(cooldowns, 3)
    cooldowns.forget(A)
    assert cooldowns.blocking(A, MODEL) is None and cooldowns.revision(A) == 0
    assert not cooldowns.probe_only(A, MODEL)


def test_scale_2_model_failures_of_other_replicas_count_toward_the_threshold(clock: FakeClock) -> None:
    here, there = book(clock), book(clock)
    told: list[tuple[int, str, float]] = []
    cleared: list[tuple[int, str]] = []
    here.on_failure = lambda account, model, at: told.append((account, model, at))
    here.on_cleared = lambda account, model: cleared.append((account, model))
    assert fail(here, 2) is None
    assert [entry[:2] for entry in told] == [(1, MODEL), (1, MODEL)]  # each told to the others
    for account, model, at in told:
        there.note_failure(account, model, at)
    cooldown = fail(there, 1)  # the third in the window, on the other replica
    assert cooldown is not None and cooldown.streak == 1
    here.apply(cooldown, 1, MODEL, there.revision(1))  # published back: the same cooldown, the same streak
    assert here.blocking(1, MODEL) is cooldown
    clock.advance(cooldown.until - clock.time() + 1)
    assert here.succeeded(1, MODEL, here.revision(1))
    assert cleared == [(1, MODEL)]  # the success is told, and clears the other replica's count
    there.clear_failures(1, MODEL)
    assert fail(there, 2) is None  # counting starts again from nothing
