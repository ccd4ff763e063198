"""Limits shown to clients (CLIENT-5): the Codex CLI's usage endpoints from the pool, and Anthropic's
``anthropic-ratelimit-unified-*`` headers on native Claude calls.

The usage answer is checked against what the Codex CLI deserialises (its backend client's
``RateLimitStatusPayload``: ``plan_type`` one of its plan names; ``rate_limit.allowed`` and
``limit_reached`` booleans; each window's ``used_percent``, ``limit_window_seconds``,
``reset_after_seconds`` and ``reset_at`` as ``i32``; ``credits`` optional), read from its source,
and proven with the real CLI: its app server's ``account/rateLimits/read`` (what ``/status`` shows)
reads SubLane's answer when its ``chatgpt_base_url`` is the gateway and its stored ChatGPT access
token is a SubLane key.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_pool import Pool
from test_real_clients import _client

from sublane_sim import encode_unsigned_jwt, parse_sse

PATHS = ("/api/codex/usage", "/backend-api/wham/usage")
CLI_PLANS = {"guest", "free", "go", "plus", "pro", "free_workspace", "team", "business", "education"}
CLI_PLANS |= {"quorum", "k12", "enterprise", "edu"}
I32 = range(-(2**31), 2**31)


def _assert_cli_shape(payload: dict[str, object]) -> None:
    """What serde makes of it in the CLI: required fields present, of the CLI's types."""
    assert payload["plan_type"] in CLI_PLANS
    rate_limit = payload["rate_limit"]
    assert isinstance(rate_limit, dict)
    assert type(rate_limit["allowed"]) is bool and type(rate_limit["limit_reached"]) is bool
    for key in ("primary_window", "secondary_window"):
        window = rate_limit.get(key)
        if window is None:
            continue
        assert set(window) >= {"used_percent", "limit_window_seconds", "reset_after_seconds", "reset_at"}
        for field in ("used_percent", "limit_window_seconds", "reset_after_seconds", "reset_at"):
            assert type(window[field]) is int and window[field] in I32, (field, window)
    assert payload.get("credits") is None or isinstance(payload["credits"], dict)


def _use_every_account(pool: Pool) -> None:
    """Model calls until each account answered one, then until the quota their answers' headers
    reported is stored (observations are written in batches)."""
    with pool.client() as client:
        for attempt in range(12):
            used = {record.account_id for record in pool.sim.requests(endpoint="codex.responses")}
            if used >= {account.id for account in pool.sim_accounts}:
                break
            body = {"model": "gpt-5-codex", "input": f"call {attempt}"}
            assert client.post("/v1/responses", json=body).status_code == 200
        else:
            raise AssertionError("an account was never used")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            items = pool.admin.get("/api/accounts/runtime").json()["accounts"]
            windows = [row for item in items for row in item["quota"] if row["fresh"]]
            if len(windows) >= 2 * len(pool.account_ids):
                return
            time.sleep(0.05)
        raise AssertionError("the observed quota was never stored")


def _without_countdowns(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` without its windows' ``reset_after_seconds`` (they count down between reads)."""
    limits = dict(payload["rate_limit"])
    for name in ("primary_window", "secondary_window"):
        if limits.get(name) is not None:
            limits[name] = {key: value for key, value in limits[name].items() if key != "reset_after_seconds"}
    return {**payload, "rate_limit": limits}


def test_client_5_codex_usage_endpoints_answer_the_pools_windows_in_the_clis_shape(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    first, second = (account.id for account in pool.sim_accounts)
    pool.sim.set_quota(first, "primary", used_percent=40, reset_in_s=3000)
    pool.sim.set_quota(second, "primary", used_percent=80, reset_in_s=1200)
    pool.sim.set_quota(first, "secondary", used_percent=10, reset_in_s=500_000)
    pool.sim.set_quota(second, "secondary", used_percent=31, reset_in_s=400_000)
    _use_every_account(pool)
    answers = []
    for path in PATHS:
        with pool.client() as client:
            response = client.get(path)
        assert response.status_code == 200, response.text
        answers.append(response.json())
    payload = answers[0]
    _assert_cli_shape(payload)
    # both path styles of the CLI read the same pool (a second may tick between the two reads)
    assert _without_countdowns(answers[1]) == _without_countdowns(payload)
    for name in ("primary_window", "secondary_window"):
        later, earlier = answers[1]["rate_limit"][name], payload["rate_limit"][name]
        assert 0 <= earlier["reset_after_seconds"] - later["reset_after_seconds"] <= 1
    now = time.time()
    primary, secondary = payload["rate_limit"]["primary_window"], payload["rate_limit"]["secondary_window"]
    assert primary["used_percent"] == 60 and secondary["used_percent"] == 20  # the mean of the usable
    assert abs(primary["reset_at"] - (now + 1200)) < 30  # the soonest reset
    assert abs(primary["reset_after_seconds"] - 1200) < 30
    assert abs(secondary["reset_at"] - (now + 400_000)) < 30
    assert primary["limit_window_seconds"] > 0
    assert payload["rate_limit"] == {**payload["rate_limit"], "allowed": True, "limit_reached": False}
    assert payload["plan_type"] == "plus"  # the simulator's default plan
    text = str(payload)
    assert all(account.email not in text for account in pool.sim_accounts)


def _cli_rate_limits(home: Path, base_url: str, key: str) -> dict[str, Any]:
    """``account/rateLimits/read`` of the real Codex CLI's app server (JSON-RPC over stdio), signed
    in with ChatGPT tokens whose access token is ``key``; ``chatgpt_base_url`` = ``base_url``."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    claims = {"email": "member@example.test", "exp": int(time.time()) + 86400}
    claims["https://api.openai.com/auth"] = {"chatgpt_plan_type": "plus", "chatgpt_account_id": "acct-1"}
    tokens = {"id_token": encode_unsigned_jwt(claims), "access_token": key, "refresh_token": "unused"}
    auth = {
        "OPENAI_API_KEY": None,
        "tokens": {**tokens, "account_id": "acct-1"},
        "last_refresh": "2026-12-01T00:00:00Z",
    }
    (codex_home / "auth.json").write_text(json.dumps(auth))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "CODEX_HOME": str(codex_home)}
    args = [str(_client("codex")), "app-server", "-c", f'chatgpt_base_url="{base_url}"']
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "t", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "account/rateLimits/read"},
    ]
    with subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=home,
        text=True,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("".join(json.dumps(request) + "\n" for request in requests))
        server.stdin.flush()
        try:
            for line in server.stdout:
                message = json.loads(line)
                if message.get("id") == 2:
                    result: dict[str, Any] = message["result"]
                    return result
        finally:
            server.kill()
    raise AssertionError("the app server did not answer account/rateLimits/read")


@pytest.mark.e2e
@pytest.mark.parametrize("suffix", ["", "/backend-api"], ids=["api-codex-usage", "wham-usage"])
def test_client_5_the_real_codex_cli_reads_the_pools_windows(
    make_pool: Callable[..., Pool], tmp_path: Path, suffix: str
) -> None:
    _client("codex")
    pool = make_pool(accounts=2)
    first, second = (account.id for account in pool.sim_accounts)
    pool.sim.set_quota(first, "primary", used_percent=20, reset_in_s=3000)
    pool.sim.set_quota(second, "primary", used_percent=70, reset_in_s=1200)
    _use_every_account(pool)
    with pool.client() as client:
        expected = client.get(PATHS[0]).json()["rate_limit"]["primary_window"]
    limits = _cli_rate_limits(tmp_path, pool.gateway.url + suffix, pool.key)["rateLimits"]
    assert limits["primary"] == {
        "usedPercent": 45,
        "windowDurationMins": 300,
        "resetsAt": expected["reset_at"],
    }
    assert limits["secondary"]["windowDurationMins"] == 7 * 24 * 60
    assert limits["planType"] == "plus"


def test_client_5_codex_usage_needs_a_sublane_key(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    with pool.gateway.client() as anonymous:
        assert anonymous.get(PATHS[0]).status_code == 401
    with pool.client("sl_not-a-key") as wrong:
        assert wrong.get(PATHS[1]).status_code == 401


def test_client_5_a_pool_out_of_quota_shows_the_limit_reached_until_the_soonest_reset(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    pool.sim.set_quota(pool.sim_accounts[0].id, "primary", used_percent=100, reset_in_s=900)
    with pool.client() as client:
        refused = client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"})
        assert refused.status_code >= 400  # the usage limit: the account is out until its reset
        deadline = time.monotonic() + 10
        payload = client.get(PATHS[0]).json()
        while payload["rate_limit"]["primary_window"] is None and time.monotonic() < deadline:
            time.sleep(0.05)
            payload = client.get(PATHS[0]).json()
    _assert_cli_shape(payload)
    rate_limit = payload["rate_limit"]
    assert rate_limit["allowed"] is False and rate_limit["limit_reached"] is True
    assert rate_limit["primary_window"]["used_percent"] == 100
    assert abs(rate_limit["primary_window"]["reset_after_seconds"] - 900) < 30


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_client_5_anthropic_unified_limit_headers_pass_through_on_native_calls(
    make_pool: Callable[..., Pool], stream: bool
) -> None:
    pool = make_pool(provider="claude")
    pool.sim.set_quota(pool.sim_accounts[0].id, "five_hour", used_percent=42, reset_in_s=900)
    body = {"model": "claude-opus-5-5", "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"x-api-key": pool.key, "anthropic-version": "2023-06-01"}
    with pool.gateway.client() as client:
        answer = client.post("/v1/messages", json={**body, "stream": stream}, headers=headers)
        assert answer.status_code == 200, answer.text
        if stream:
            assert parse_sse(answer.text)[-1].data["type"] == "message_stop"
        translated = client.post(
            "/v1/responses", json={"model": "claude-opus-5-5", "input": "hi"}, headers=headers
        )
    relayed = {k: v for k, v in answer.headers.items() if k.startswith("anthropic-ratelimit-unified-")}
    assert relayed["anthropic-ratelimit-unified-5h-utilization"] == "0.42"  # as the upstream wrote it
    assert relayed["anthropic-ratelimit-unified-5h-status"] == "allowed"
    assert abs(int(relayed["anthropic-ratelimit-unified-5h-reset"]) - (time.time() + 900)) < 30
    assert {"anthropic-ratelimit-unified-status", "anthropic-ratelimit-unified-fallback-percentage"} <= set(
        relayed
    )
    assert not any(k.startswith("anthropic-ratelimit-") for k in translated.headers)  # native calls only
