"""Claude quota from the unified rate-limit headers and from GET /api/oauth/usage."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from sublane_core import signals
from sublane_provider_claude import ClaudeAdapter, windows_from_headers, windows_from_usage
from sublane_providers import stream_request
from sublane_providers.testing import as_httpx
from sublane_sim import Simulator

NOW = 1_800_000_000.0
QuotaWindow = signals.QuotaWindow


def iso(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).isoformat()


def test_headers_give_the_two_main_windows_in_percent() -> None:
    headers = {
        "Anthropic-Ratelimit-Unified-Status": "allowed_warning",
        "anthropic-ratelimit-unified-reset": str(int(NOW + 600)),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-status": "allowed_warning",
        "anthropic-ratelimit-unified-5h-utilization": "0.85",
        "anthropic-ratelimit-unified-5h-reset": str(int(NOW + 600)),
        "anthropic-ratelimit-unified-7d-status": "allowed",
        "anthropic-ratelimit-unified-7d-utilization": "0.3",
        "anthropic-ratelimit-unified-7d-reset": str(int(NOW + 86400)),
        "anthropic-ratelimit-unified-fallback-percentage": "0.5",
        "anthropic-ratelimit-unified-overage-status": "rejected",
        "anthropic-ratelimit-unified-overage-reset": str(int(NOW + 99)),
        "anthropic-ratelimit-unified-overage-disabled-reason": "org_level_disabled",
        "request-id": "req_1",
    }
    plan, windows = windows_from_headers(headers, NOW)
    assert plan is None
    assert windows == (
        QuotaWindow("five_hour", 85.0, 5 * 3600, NOW + 600, limit_reached=False, main=True),
        QuotaWindow("seven_day", 30.0, 7 * 86400, NOW + 86400, limit_reached=False, main=True),
    )


def test_rejected_or_full_windows_are_reached() -> None:
    headers = {
        "anthropic-ratelimit-unified-5h-status": "rejected",
        "anthropic-ratelimit-unified-5h-utilization": "0.97",
        "anthropic-ratelimit-unified-7d-utilization": "1",
    }
    _, windows = windows_from_headers(headers, NOW)
    assert [(w.window, w.limit_reached, w.resets_at) for w in windows] == [
        ("five_hour", True, None),
        ("seven_day", True, None),
    ]


def test_additional_families_are_not_main() -> None:
    headers = {
        "anthropic-ratelimit-unified-7d-utilization": "0.1",
        "anthropic-ratelimit-unified-7d_oi-status": "rejected",
        "anthropic-ratelimit-unified-7d_oi-utilization": "1.0",
        "anthropic-ratelimit-unified-7d_oi-reset": str(int(NOW + 3600)),
        "anthropic-ratelimit-unified-7d-sonnet-utilization": "0.25",
    }
    _, windows = windows_from_headers(headers, NOW)
    assert [(w.window, w.main, w.used_percent, w.window_seconds) for w in windows] == [
        ("seven_day", True, 10.0, 604800),
        ("seven_day_oi", False, 100.0, 604800),
        ("seven_day_sonnet", False, 25.0, 604800),
    ]
    assert windows[1].limit_reached and not windows[2].limit_reached


def test_overall_rejection_names_the_binding_window_when_it_sent_no_headers() -> None:
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(int(NOW + 300)),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
    }
    _, windows = windows_from_headers(headers, NOW)
    assert windows == (QuotaWindow("five_hour", None, 18000, NOW + 300, limit_reached=True, main=True),)
    allowed = dict(headers, **{"anthropic-ratelimit-unified-status": "allowed"})
    assert windows_from_headers(allowed, NOW) == (None, ())


@pytest.mark.parametrize(
    "headers",
    [{}, {"x-codex-primary-used-percent": "50"}, {"anthropic-ratelimit-unified-5h-utilization": "lots"}],
)
def test_headers_without_windows(headers: dict[str, str]) -> None:
    assert windows_from_headers(headers, NOW) == (None, ())


def test_usage_endpoint_windows() -> None:
    payload = {
        "five_hour": {"utilization": 24.0, "resets_at": iso(NOW + 3000)},
        "seven_day": {"utilization": 100, "resets_at": "2027-01-08T06:59:59.600974+00:00"},
        "seven_day_sonnet": {"utilization": 1.0, "resets_at": None},
        "seven_day_opus": None,
        "seven_day_oauth_apps": None,
        "iguana_necktie": {"utilization": None, "resets_at": None},
        "extra_usage": {"is_enabled": True, "monthly_limit": 5000, "used_credits": 12, "utilization": 0.2},
    }
    plan, windows = windows_from_usage(payload, NOW)
    assert plan is None
    assert [w.window for w in windows] == ["five_hour", "seven_day", "seven_day_sonnet"]
    five_hour, seven_day, sonnet = windows
    assert five_hour == QuotaWindow("five_hour", 24.0, 18000, five_hour.resets_at, False, True)
    assert five_hour.resets_at == pytest.approx(NOW + 3000)
    assert seven_day.limit_reached and seven_day.main
    assert seven_day.resets_at == dt.datetime(2027, 1, 8, 6, 59, 59, 600974, tzinfo=dt.UTC).timestamp()
    assert not sonnet.main and sonnet.used_percent == 1.0 and sonnet.resets_at is None


def test_usage_with_only_a_weekly_window() -> None:
    _, windows = windows_from_usage(
        {"five_hour": None, "seven_day": {"utilization": 5, "resets_at": None}}, NOW
    )
    assert [(w.window, w.main) for w in windows] == [("seven_day", True)]


async def test_headers_and_usage_endpoint_agree_on_the_simulator(sim: Simulator) -> None:
    account = sim.create_account("claude")
    sim.set_quota(account.id, "five_hour", used_percent=85, reset_in_s=1200)
    sim.set_quota(account.id, "seven_day", used_percent=12.5, reset_in_s=5 * 86400)
    async with httpx.AsyncClient(timeout=10) as http:
        adapter = ClaudeAdapter(
            base_url=sim.claude_base_url, auth_url=sim.claude_auth_url, http=http, metadata_timeout=5
        )
        bundle = adapter.parse_credentials(account.credentials).bundle
        body = {"model": "claude-opus-4-8", "max_tokens": 64, "messages": [{"role": "user", "content": "q"}]}
        response = await http.send(as_httpx(http, stream_request(adapter, bundle, body, {}, bound=False)))
        now = sim.clock.now()
        _, from_headers = adapter.quota_from_headers(response.headers, now)
        _, from_usage = await adapter.read_quota(bundle, now)
    assert [w.window for w in from_headers] == [w.window for w in from_usage] == ["five_hour", "seven_day"]
    for header_window, usage_window in zip(from_headers, from_usage, strict=True):
        assert header_window.used_percent == pytest.approx(usage_window.used_percent)
        assert header_window.resets_at == pytest.approx(usage_window.resets_at, abs=1)
        assert header_window.main and usage_window.main
        assert header_window.window_seconds == usage_window.window_seconds
