"""Classifying Anthropic error answers: 429 rate limit vs exhausted subscription, 529, 401/403, 4xx."""

from __future__ import annotations

import json

import pytest

from sublane_provider_claude import classify_failure
from sublane_providers import FailureKind

NOW = 1_800_000_000.0


def anthropic_error(kind: str, message: str = "upstream says no") -> bytes:
    return json.dumps(
        {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}
    ).encode()


def unified(**windows: tuple[str, float, float]) -> dict[str, str]:
    """Unified headers for ``five_hour=(status, utilization, reset_in_s)``-style arguments."""
    short = {"five_hour": "5h", "seven_day": "7d", "seven_day_oi": "7d_oi"}
    headers: dict[str, str] = {}
    for name, (status, utilization, reset_in) in windows.items():
        prefix = f"anthropic-ratelimit-unified-{short[name]}-"
        headers[prefix + "status"] = status
        headers[prefix + "utilization"] = str(utilization)
        headers[prefix + "reset"] = str(int(NOW + reset_in))
    return headers


def test_plain_429_is_a_rate_limit_with_retry_after() -> None:
    headers = {
        "Retry-After": "17",
        **unified(five_hour=("allowed", 0.2, 3600), seven_day=("allowed", 0.1, 86400)),
    }
    failure = classify_failure(429, headers, anthropic_error("rate_limit_error", "slow down"), NOW)
    assert failure.kind is FailureKind.RATE_LIMITED
    assert failure.retry_after == 17 and failure.code == "rate_limit_error" and failure.message == "slow down"
    assert not failure.retryable


@pytest.mark.parametrize("value", [None, "soon", "0", "7200"])
def test_429_with_unusable_retry_after_has_no_hint(value: str | None) -> None:
    headers = {} if value is None else {"retry-after": value}
    failure = classify_failure(429, headers, anthropic_error("rate_limit_error"), NOW)
    assert failure.kind is FailureKind.RATE_LIMITED and failure.retry_after is None


def test_rejected_five_hour_window_is_quota_exhausted_until_its_reset() -> None:
    headers = {
        "retry-after": "60",
        **unified(five_hour=("rejected", 1.0, 60), seven_day=("allowed", 0.3, 86400)),
    }
    failure = classify_failure(429, headers, anthropic_error("rate_limit_error"), NOW)
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED
    assert failure.code == "usage_limit_reached" and failure.retry_after == 60


def test_quota_hint_is_the_later_of_retry_after_and_the_reset_and_bounded() -> None:
    later_reset = {"retry-after": "5", **unified(five_hour=("rejected", 1.0, 900))}
    assert classify_failure(429, later_reset, b"", NOW).retry_after == 900
    later_retry = {"retry-after": "1200", **unified(five_hour=("rejected", 1.0, 900))}
    assert classify_failure(429, later_retry, b"", NOW).retry_after == 1200
    weekly = {"retry-after": "259200", **unified(seven_day=("rejected", 1.0, 3 * 86400))}
    failure = classify_failure(429, weekly, b"", NOW)
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED and failure.retry_after == 3600
    past_reset = unified(five_hour=("rejected", 1.0, -30))
    assert classify_failure(429, past_reset, b"", NOW).retry_after == 1


def test_overall_rejected_with_a_main_claim_and_no_window_headers_is_quota_exhausted() -> None:
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(int(NOW + 120)),
        "anthropic-ratelimit-unified-representative-claim": "seven_day",
    }
    failure = classify_failure(429, headers, anthropic_error("rate_limit_error"), NOW)
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED and failure.retry_after == 120


def test_only_an_additional_window_rejected_is_a_plain_rate_limit() -> None:
    headers = {
        "retry-after": "30",
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-representative-claim": "seven_day_oi",
        **unified(five_hour=("allowed", 0.5, 600), seven_day_oi=("rejected", 1.0, 86400)),
    }
    failure = classify_failure(429, headers, anthropic_error("rate_limit_error"), NOW)
    assert failure.kind is FailureKind.RATE_LIMITED and failure.retry_after == 30


def test_rejected_without_any_reset_is_a_plain_rate_limit() -> None:
    headers = {"anthropic-ratelimit-unified-5h-status": "rejected", "retry-after": "40"}
    failure = classify_failure(429, headers, anthropic_error("rate_limit_error"), NOW)
    assert failure.kind is FailureKind.RATE_LIMITED and failure.retry_after == 40


def test_529_overloaded_is_transient_but_not_replayed() -> None:
    failure = classify_failure(529, {}, anthropic_error("overloaded_error", "Overloaded"), NOW)
    assert failure.kind is FailureKind.TRANSIENT and failure.code == "overloaded_error"
    assert failure.message == "Overloaded" and not failure.retryable


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
def test_retryable_statuses_are_transient(status: int) -> None:
    failure = classify_failure(status, {"retry-after": "2"}, anthropic_error("api_error"), NOW)
    assert failure.kind is FailureKind.TRANSIENT and failure.retryable and failure.retry_after == 2


def test_html_gateway_pages_are_transient_with_a_generic_message() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head></html>"
    failure = classify_failure(502, {}, page, NOW)
    assert failure.kind is FailureKind.TRANSIENT
    assert failure.code == "http_502" and failure.message == "The upstream answered HTTP 502."


def test_401_is_unauthorized_and_403_forbidden() -> None:
    unauthorized = classify_failure(
        401, {}, anthropic_error("authentication_error", "OAuth token has expired."), NOW
    )
    assert unauthorized.kind is FailureKind.UNAUTHORIZED and unauthorized.code == "authentication_error"
    forbidden = classify_failure(403, {}, anthropic_error("permission_error"), NOW)
    assert forbidden.kind is FailureKind.FORBIDDEN and forbidden.code == "permission_error"


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (404, "not_found_error"), (413, "request_too_large")],
)
def test_other_4xx_are_the_clients_errors_with_the_upstream_message(status: int, kind: str) -> None:
    failure = classify_failure(status, {}, anthropic_error(kind, "max_tokens: Field required"), NOW)
    assert failure.kind is FailureKind.CLIENT_ERROR
    assert failure.code == kind and failure.message == "max_tokens: Field required"


def test_long_upstream_text_is_bounded() -> None:
    failure = classify_failure(400, {}, anthropic_error("x" * 300, "m" * 5000), NOW)
    assert len(failure.code) == 64 and len(failure.message) == 500


@pytest.mark.parametrize("body", [b"", b"null", b"[]", b'{"error": 5}', b'{"type":"error"}'])
def test_bodies_without_an_error_object_fall_back_to_the_status(body: bytes) -> None:
    failure = classify_failure(400, {}, body, NOW)
    assert failure.code == "http_400" and failure.message == "The upstream answered HTTP 400."
