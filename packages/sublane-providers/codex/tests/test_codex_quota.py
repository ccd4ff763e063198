"""Codex quota from an answer's ``x-codex-*`` headers (QUOTA-2, QUOTA-4), read on every answer."""

from __future__ import annotations

import httpx
import pytest

from sublane_core import signals
from sublane_provider_codex import windows_from_headers
from sublane_providers.kit import headers_with_prefix

NOW = 1_000_000.0
MOCK = [  # what bench/mock.py sends
    ("content-type", "text/event-stream; charset=utf-8"),
    ("x-codex-active-limit", "codex"),
    ("x-codex-plan-type", "plus"),
    ("x-codex-primary-used-percent", "1"),
    ("x-codex-primary-window-minutes", "300"),
    ("x-codex-primary-reset-after-seconds", "18000"),
    ("x-codex-secondary-used-percent", "1"),
    ("x-codex-secondary-window-minutes", "10080"),
    ("x-codex-secondary-reset-after-seconds", "604800"),
    ("x-request-id", "req_bench"),
]


def test_quota_2_the_main_windows_and_the_plan_from_the_headers() -> None:
    plan, windows = windows_from_headers(httpx.Headers(MOCK), NOW)
    assert plan == "plus"
    assert windows == (
        signals.QuotaWindow("primary", 1.0, 18_000, NOW + 18_000, False, True),
        signals.QuotaWindow("secondary", 1.0, 604_800, NOW + 604_800, False, True),
    )


def test_quota_4_another_family_is_reported_but_not_main_and_reset_at_wins() -> None:
    headers = httpx.Headers(
        {
            "X-Codex-Primary-Used-Percent": " 100 ",
            "x-codex-primary-reset-at": "1000500",
            "x-codex-primary-reset-after-seconds": "99",
            "x-gpt-5-codex-mini-primary-used-percent": "40",
            "x-gpt-5-codex-mini-primary-window-minutes": "60",
            "x-codex-secondary-used-percent": "not a number",
        }
    )
    plan, windows = windows_from_headers(headers, NOW)
    assert plan is None
    assert windows == (
        signals.QuotaWindow("primary", 100.0, None, 1_000_500.0, True, True),
        signals.QuotaWindow("gpt-5-codex-mini:primary", 40.0, 3600, None, False, False),
    )


@pytest.mark.parametrize(
    "headers",
    [httpx.Headers([("content-type", "application/json"), ("x-request-id", "r")]), httpx.Headers(), {}],
)
def test_quota_2_an_answer_without_quota_headers_reports_nothing(headers: httpx.Headers) -> None:
    assert windows_from_headers(headers, NOW) == (None, ())


def test_quota_2_a_plain_mapping_reads_the_same() -> None:
    assert windows_from_headers(dict(MOCK), NOW) == windows_from_headers(httpx.Headers(MOCK), NOW)


def test_quota_2_picked_headers_read_as_httpx_reads_them() -> None:
    """Lower-case names, repeated fields joined as ``items()`` joins them, non-ASCII values
    decoded in the encoding httpx picks for the whole header list."""
    for raw in (
        [(b"X-Codex-Plan-Type", b"plus"), (b"x-codex-plan-type", b"pro"), (b"Other", b"1")],
        [(b"x-codex-plan-type", "caf\u00e9".encode()), (b"x-a", b"1")],
        [(b"x-codex-plan-type", b"caf\xe9"), (b"x-a", "\u00e9".encode())],
        [(b"x-codex-plan-type", b"plus"), (b"server", b"caf\xe9")],
    ):
        headers = httpx.Headers(raw)
        expected = {name: value for name, value in headers.items() if name.startswith("x-")}
        assert headers_with_prefix(headers, "x-") == expected
