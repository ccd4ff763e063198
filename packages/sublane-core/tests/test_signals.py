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
