from __future__ import annotations

import logging

import pytest

from sublane_core import signals


def test_receivers_get_the_typed_payload_and_can_disconnect() -> None:
    seen: list[signals.LeaseReleased] = []
    disconnect = signals.lease_released.connect(seen.append)
    try:
        payload = signals.LeaseReleased(request_id="req_1", account_id=3, model="gpt-5", outcome="success")
        signals.lease_released.send(payload)
        assert seen == [payload]
    finally:
        disconnect()
    signals.lease_released.send(
        signals.LeaseReleased(request_id="req_2", account_id=3, model="gpt-5", outcome="success")
    )
    assert len(seen) == 1
    assert not signals.lease_released.has_receivers


def test_send_refuses_a_payload_of_the_wrong_type() -> None:
    with pytest.raises(TypeError):
        signals.lease_released.send(signals.LeaseAcquired(request_id="req_1", account_id=1, model="m"))  # type: ignore[arg-type]


def test_a_failing_receiver_is_logged_and_never_breaks_the_sender(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[object] = []

    def broken(_payload: signals.AccountChanged) -> None:
        raise RuntimeError("receiver bug")

    first = signals.account_changed.connect(broken)
    second = signals.account_changed.connect(seen.append)
    try:
        with caplog.at_level(logging.ERROR, logger="sublane.signals"):
            signals.account_changed.send(
                signals.AccountChanged(
                    account_id=1, change=signals.AccountChange.LIMITS, lifecycle_revision=1, max_concurrency=5
                )
            )
    finally:
        first()
        second()
    assert len(seen) == 1  # the receiver after the broken one still ran
    assert "account-changed" in caplog.text


def test_payloads_are_frozen() -> None:
    payload = signals.UpstreamFailed(account_id=1, model="m", runtime_revision=2, status=500, error_code="x")
    with pytest.raises(AttributeError):
        payload.status = 200  # type: ignore[misc]


class _Sender:
    """A sender object (the gateway's runtimes play this part)."""


def _released(request_id: str) -> signals.LeaseReleased:
    return signals.LeaseReleased(request_id=request_id, account_id=1, model="m", outcome="success")


def test_receivers_of_a_sender_follow_every_connect_and_disconnect() -> None:
    first, second = _Sender(), _Sender()
    seen: list[tuple[str, str]] = []
    for_first = signals.lease_released.connect(lambda p: seen.append(("first", p.request_id)), sender=first)
    for_all = signals.lease_released.connect(lambda p: seen.append(("any", p.request_id)))
    try:
        signals.lease_released.send(_released("a"), sender=first)
        signals.lease_released.send(_released("b"), sender=second)
        signals.lease_released.send(_released("c"))
        for_second = signals.lease_released.connect(
            lambda p: seen.append(("second", p.request_id)), sender=second
        )
        signals.lease_released.send(_released("d"), sender=second)  # a receiver added after a send
        for_first()
        signals.lease_released.send(_released("e"), sender=first)  # a receiver removed after a send
        for_second()
    finally:
        for_all()
    assert sorted(seen) == sorted(
        [
            ("first", "a"),
            ("any", "a"),
            ("any", "b"),
            ("any", "c"),
            ("second", "d"),
            ("any", "d"),
            ("any", "e"),
        ]
    )


def test_a_new_sender_never_gets_the_receivers_of_a_dead_one() -> None:
    seen: list[str] = []
    dead = _Sender()
    dead_id = id(dead)
    # The disconnect function is dropped: nothing but this test holds the sender.
    signals.lease_released.connect(lambda p: seen.append(p.request_id), sender=dead)
    signals.lease_released.send(_released("before"), sender=dead)
    del dead  # blinker lets go of its receivers; its id may now be reused by the next object
    reused = False
    for _ in range(200):  # freed at once: each stranger takes the slot the previous one left
        stranger = _Sender()
        reused = reused or id(stranger) == dead_id
        signals.lease_released.send(_released("stranger"), sender=stranger)
        del stranger
    keep: list[_Sender] = []  # else keep them alive, so the allocator moves on to other free slots
    while not reused and len(keep) < 20_000:
        stranger = _Sender()
        reused = id(stranger) == dead_id
        signals.lease_released.send(_released("stranger"), sender=stranger)
        keep.append(stranger)
    del keep
    assert seen == ["before"]
    assert reused  # CPython hands the freed memory out again: the case this test is about
