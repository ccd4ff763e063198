"""Admission before selection: workspace capacity (ADM-2), member concurrency (ADM-3), RPM (ADM-4)."""

from __future__ import annotations

import pytest

from sublane_core import FakeClock, SubLaneError
from sublane_scheduler import Admission


def refused(admission: Admission, user_id: int, member_limit: int = 0, rpm: int = 0) -> SubLaneError:
    with pytest.raises(SubLaneError) as error:
        admission.enter(user_id, member_limit, rpm)
    return error.value


def test_adm_2_workspace_capacity_counts_every_operation(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=3)
    first = admission.enter(1, 0, 0)
    admission.enter(2, 0, 0)
    metadata = admission.enter_metadata()  # a quota read or model discovery counts too
    assert admission.in_use == 3
    busy = refused(admission, 3)
    assert (busy.code, busy.status, busy.retry_after) == ("workspace_busy", 429, 1)
    with pytest.raises(SubLaneError, match="workspace_busy"):
        admission.enter_metadata()
    metadata.close()
    admission.enter(3, 0, 0)
    first.close()
    assert admission.in_use == 2


def test_adm_3_member_concurrency_is_per_member(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=100)
    tickets = [admission.enter(1, 2, 0) for _ in range(2)]
    busy = refused(admission, 1, member_limit=2)
    assert (busy.code, busy.status) == ("member_busy", 429)
    admission.enter(2, 2, 0)  # another member is not affected
    assert admission.member_in_use(1) == 2 and admission.member_in_use(2) == 1
    tickets[0].close()
    admission.enter(1, 2, 0)
    assert admission.member_in_use(1) == 2


def test_adm_3_zero_means_unlimited(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=1000)
    for _ in range(500):
        admission.enter(1, 0, 0)
    assert admission.member_in_use(1) == 500


def test_adm_3_metadata_reads_do_not_count_toward_a_member(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=10)
    admission.enter_metadata()
    admission.enter(1, 1, 0)
    assert admission.member_in_use(1) == 1 and admission.in_use == 2


def test_adm_6_a_ticket_gives_its_place_back_once(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=2)
    ticket = admission.enter(1, 1, 0)
    other = admission.enter(2, 1, 0)
    assert ticket.close() is True
    assert ticket.close() is False and ticket.close() is False
    assert admission.in_use == 1 and admission.member_in_use(1) == 0 and admission.member_in_use(2) == 1
    other.close()
    assert admission.in_use == 0


def test_adm_4_requests_per_minute_with_retry_after(clock: FakeClock) -> None:
    clock.advance(5)  # 5 s into a UTC minute
    admission = Admission(clock, capacity=100)
    admission.enter(1, 0, 2).close()
    clock.advance(15)
    admission.enter(1, 0, 2).close()
    limited = refused(admission, 1, rpm=2)
    assert (limited.code, limited.status) == ("member_rate_limited", 429)
    assert limited.retry_after == pytest.approx(40)  # until the next UTC minute begins
    admission.enter(2, 0, 2)  # per member


def test_team_1_rpm_counts_fixed_utc_minute_windows(clock: FakeClock) -> None:
    assert clock.time() % 60 == 0  # the fake clock starts on a full UTC minute
    admission = Admission(clock, capacity=100)
    clock.advance(59)
    admission.enter(1, 0, 2).close()
    admission.enter(1, 0, 2).close()
    assert refused(admission, 1, rpm=2).retry_after == pytest.approx(1)
    clock.advance(1)  # 12:00:59 → 12:01:00: a new window, though the calls are a second old
    admission.enter(1, 0, 2).close()
    admission.enter(1, 0, 2).close()
    assert refused(admission, 1, rpm=2).retry_after == pytest.approx(60)
    clock.advance(119.5)  # a window with no call in it changes nothing
    admission.enter(1, 0, 2).close()
    assert refused(admission, 1, rpm=1).retry_after == 1.0  # 0.5 s left: at least one second


def test_adm_4_a_refused_call_does_not_use_the_allowance(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=100)
    admission.enter(1, 0, 1).close()
    for _ in range(5):
        refused(admission, 1, rpm=1)
        clock.advance(10)
    clock.advance(10)  # the next UTC minute
    admission.enter(1, 0, 1)
    assert refused(admission, 1, rpm=1).code == "member_rate_limited"


def test_adm_4_zero_means_unlimited(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=1000)
    for _ in range(300):
        admission.enter(1, 0, 0).close()
    assert admission.in_use == 0


def test_adm_4_busy_refusals_do_not_use_the_allowance(clock: FakeClock) -> None:
    admission = Admission(clock, capacity=100)
    running = admission.enter(1, 1, 2)
    for _ in range(3):
        assert refused(admission, 1, member_limit=1, rpm=2).code == "member_busy"
    running.close()
    admission.enter(1, 1, 2)  # the second of two allowed calls this minute
