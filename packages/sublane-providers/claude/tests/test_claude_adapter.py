"""The Claude adapter passes the shared contract kit against the simulator, and what the kit does not
cover of it: non-streaming and count_tokens requests, refresh details, the login and the profile."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from sublane_provider_claude import KNOWN_MODELS, ClaudeAdapter
from sublane_providers import (
    FailureKind,
    Outcome,
    ProviderAdapter,
    RefreshFailed,
    code_from_pasted,
    stream_request,
)
from sublane_providers.testing import AdapterContract, as_httpx
from sublane_sim import Behaviour, RefreshOutcome, SimAccount, Simulator

MODEL = "claude-opus-4-8"


def claude_adapter(sim: Simulator, http: httpx.AsyncClient) -> ClaudeAdapter:
    return ClaudeAdapter(
        base_url=sim.claude_base_url,
        auth_url=sim.claude_auth_url,
        http=http,
        metadata_timeout=10,
        authorize_url=f"{sim.base_url}/oauth/authorize",
        clock=sim.clock.now,
    )


def minimal_body() -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": "say hi"}]}


class TestClaudeAdapterContract(AdapterContract):
    provider = "claude"
    model = MODEL

    def make_adapter(self, sim: Simulator, http: httpx.AsyncClient) -> ProviderAdapter:
        return claude_adapter(sim, http)

    def native_body(self) -> dict[str, Any]:
        return minimal_body()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
def adapter(sim: Simulator, http: httpx.AsyncClient) -> ClaudeAdapter:
    return claude_adapter(sim, http)


@pytest.fixture
def account(sim: Simulator) -> SimAccount:
    return sim.create_account("claude")


@pytest.fixture
def bundle(adapter: ClaudeAdapter, account: SimAccount) -> dict[str, Any]:
    return dict(adapter.parse_credentials(account.credentials).bundle)


def test_adapter_names_and_endpoints(adapter: ClaudeAdapter, sim: Simulator) -> None:
    assert adapter.name == "claude" and adapter.refresh_fallback is False
    assert adapter.messages_url == f"{sim.claude_base_url}/v1/messages?beta=true"
    assert adapter.count_tokens_url == f"{sim.claude_base_url}/v1/messages/count_tokens?beta=true"
    assert ClaudeAdapter.access({"access_token": "sk-ant-oat01-x"}) == "sk-ant-oat01-x"


async def test_stream_request_forces_stream_and_sends_what_the_simulator_checks(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    body = dict(minimal_body(), stream=False, thinking={"type": "adaptive"})
    client = {
        "anthropic-beta": "claude-code-20250219",
        "x-api-key": "sk-sublane-member",
        "user-agent": "claude-cli/2.1.197",
    }
    request = stream_request(adapter, bundle, body, client, bound=True)
    assert request.headers["accept"] == "text/event-stream"
    response = await http.send(as_httpx(http, request))
    assert response.status_code == 200
    observer = adapter.new_observer()
    for block in response.text.split("\n\n"):
        name = data = None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        if data is not None:
            observer.observe(name, data)
    state = observer.state
    assert state.outcome is Outcome.SUCCESS and state.first_delta is not None
    seen = sim.requests(account_id=account.id, endpoint="claude.messages")[-1]
    assert seen.token_kind == "access" and seen.token == account.access_token
    assert seen.body["stream"] is True and seen.body["thinking"] == {"type": "adaptive"}
    assert "x-api-key" not in seen.headers
    assert seen.headers["anthropic-beta"] == "claude-code-20250219,oauth-2025-04-20"
    assert seen.headers["user-agent"] == "claude-cli/2.1.197"
    assert seen.query == "beta=true"
    assert state.response_id == seen.response_id


async def test_json_request_answers_one_message(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    request = adapter.json_request(bundle, dict(minimal_body(), stream=True), {}, bound=False)
    response = await http.send(as_httpx(http, request))
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    observer = adapter.new_observer()
    observer.observe_message(response.json())
    assert observer.state.outcome is Outcome.SUCCESS
    assert observer.state.usage is not None and (observer.state.usage.input_tokens or 0) > 0
    assert observer.state.usage.output_tokens == 8
    assert sim.requests(account_id=account.id)[-1].body["stream"] is False
    sim.script(account.id, Behaviour(kind="incomplete"))
    truncated = adapter.new_observer()
    truncated.observe_message(
        (
            await http.send(as_httpx(http, adapter.json_request(bundle, minimal_body(), {}, bound=False)))
        ).json()
    )
    assert truncated.state.outcome is Outcome.INCOMPLETE and truncated.stop_reason == "max_tokens"


async def test_json_request_overload_is_a_transient_529(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    sim.script(account.id, Behaviour.overload())
    response = await http.send(as_httpx(http, adapter.json_request(bundle, minimal_body(), {}, bound=False)))
    assert response.status_code == 529
    failure = adapter.classify_failure(529, response.headers, response.content, sim.clock.now())
    assert failure.kind is FailureKind.TRANSIENT and failure.code == "overloaded_error"
    assert not failure.retryable


async def test_count_tokens_request(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "count me"}]}
    client = {"x-claude-code-session-id": "s-1", "authorization": "Bearer sk-sublane-member"}
    response = await http.send(as_httpx(http, adapter.count_tokens_request(bundle, body, client)))
    assert response.status_code == 200 and response.json()["input_tokens"] > 0
    seen = sim.requests(account_id=account.id, endpoint="claude.count_tokens")[-1]
    assert seen.body == body and "x-claude-code-session-id" not in seen.headers
    assert seen.headers["authorization"] == f"Bearer {account.access_token}"
    assert sim.counters(account.id).model_requests == 0


async def test_exhausted_subscription_is_quota_exhausted_with_a_bounded_hint(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    sim.set_quota(account.id, "five_hour", used_percent=100, reset_in_s=90)
    response = await http.send(
        as_httpx(http, stream_request(adapter, bundle, minimal_body(), {}, bound=False))
    )
    assert response.status_code == 429
    now = sim.clock.now()
    failure = adapter.classify_failure(429, response.headers, response.content, now)
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED and 88 <= (failure.retry_after or 0) <= 90
    _plan, windows = adapter.quota_from_headers(response.headers, now)
    five_hour = windows[0]
    assert five_hour.window == "five_hour" and five_hour.main and five_hour.limit_reached
    assert five_hour.used_percent == 100

    sim.set_quota(account.id, "five_hour", used_percent=0)
    sim.set_quota(account.id, "seven_day", used_percent=100, reset_in_s=3 * 86400)
    weekly = await http.send(as_httpx(http, stream_request(adapter, bundle, minimal_body(), {}, bound=False)))
    failure = adapter.classify_failure(429, weekly.headers, weekly.content, sim.clock.now())
    assert failure.kind is FailureKind.QUOTA_EXHAUSTED and failure.retry_after == 3600


async def test_scripted_rate_limit_without_rejected_windows_is_a_rate_limit(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    sim.script(account.id, Behaviour.error(429, retry_after="12"))
    response = await http.send(
        as_httpx(http, stream_request(adapter, bundle, minimal_body(), {}, bound=False))
    )
    failure = adapter.classify_failure(429, response.headers, response.content, sim.clock.now())
    assert failure.kind is FailureKind.RATE_LIMITED and failure.retry_after == 12
    assert failure.code == "rate_limit_error"


async def test_expired_token_is_unauthorized_and_a_refresh_fixes_it(
    adapter: ClaudeAdapter,
    http: httpx.AsyncClient,
    bundle: dict[str, Any],
    sim: Simulator,
    account: SimAccount,
) -> None:
    sim.expire_access_tokens(account.id)
    rejected = await http.send(
        as_httpx(http, stream_request(adapter, bundle, minimal_body(), {}, bound=False))
    )
    assert rejected.status_code == 401
    failure = adapter.classify_failure(401, rejected.headers, rejected.content, sim.clock.now())
    assert failure.kind is FailureKind.UNAUTHORIZED and failure.code == "authentication_error"
    refreshed = await adapter.refresh(bundle)
    again = await http.send(
        as_httpx(http, stream_request(adapter, refreshed.bundle, minimal_body(), {}, bound=False))
    )
    assert again.status_code == 200


async def test_refresh_rotates_sets_expiry_and_sends_the_claude_code_client(
    adapter: ClaudeAdapter, bundle: dict[str, Any], sim: Simulator, account: SimAccount
) -> None:
    refreshed = await adapter.refresh(bundle)
    current = sim.account(account.id)
    assert refreshed.bundle["access_token"] == current.access_token
    assert refreshed.bundle["refresh_token"] == current.refresh_token != bundle["refresh_token"]
    assert refreshed.expires_at == pytest.approx(current.access_expires_at, abs=2)
    assert refreshed.bundle["expires_at"] == refreshed.expires_at
    assert refreshed.bundle["subscription_type"] == "max"  # untouched fields are kept
    seen = sim.requests(endpoint="claude.token")[-1]
    assert seen.body == {
        "grant_type": "refresh_token",
        "refresh_token": bundle["refresh_token"],
        "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
    }
    assert seen.headers["content-type"] == "application/json"
    with pytest.raises(RefreshFailed) as reused:  # the old refresh token is burnt
        await adapter.refresh(bundle)
    assert reused.value.permanent and reused.value.code == "invalid_grant"


async def test_refresh_keeps_the_old_refresh_token_when_the_answer_omits_one(
    adapter: ClaudeAdapter, bundle: dict[str, Any], sim: Simulator, account: SimAccount
) -> None:
    sim.script_refresh(account.id, RefreshOutcome(omit_refresh_token=True))
    refreshed = await adapter.refresh(bundle)
    assert refreshed.bundle["refresh_token"] == bundle["refresh_token"]
    assert refreshed.bundle["access_token"] != bundle["access_token"]
    again = await adapter.refresh(refreshed.bundle)  # and it still works
    assert again.bundle["refresh_token"] != bundle["refresh_token"]


async def test_refresh_failures(
    adapter: ClaudeAdapter, bundle: dict[str, Any], sim: Simulator, account: SimAccount
) -> None:
    sim.script_refresh(
        account.id,
        RefreshOutcome(kind="error", status=429, retry_after="7200"),
        RefreshOutcome(kind="error", status=503),
        RefreshOutcome(kind="refresh_token_expired"),
    )
    with pytest.raises(RefreshFailed) as limited:
        await adapter.refresh(bundle)
    assert not limited.value.permanent and limited.value.retry_after == 3600  # capped at 1 h
    with pytest.raises(RefreshFailed) as unavailable:
        await adapter.refresh(bundle)
    assert not unavailable.value.permanent and unavailable.value.retry_after is None
    with pytest.raises(RefreshFailed) as expired:
        await adapter.refresh(bundle)
    assert expired.value.permanent and expired.value.code == "invalid_grant"
    assert bundle["refresh_token"] not in str(expired.value)


async def test_refresh_timeout_and_unreachable_are_transient(
    sim: Simulator, bundle: dict[str, Any], account: SimAccount
) -> None:
    sim.script_refresh(account.id, RefreshOutcome(delay_ms=500))
    async with httpx.AsyncClient() as http:
        slow = ClaudeAdapter(
            base_url=sim.claude_base_url, auth_url=sim.claude_auth_url, http=http, metadata_timeout=0.1
        )
        with pytest.raises(RefreshFailed) as timed_out:
            await slow.refresh(bundle)
        assert not timed_out.value.permanent and timed_out.value.code.startswith("network:")
        gone = ClaudeAdapter(
            base_url="http://127.0.0.1:9", auth_url="http://127.0.0.1:9", http=http, metadata_timeout=2
        )
        with pytest.raises(RefreshFailed) as unreachable:
            await gone.refresh(bundle)
        assert not unreachable.value.permanent


async def test_read_quota_mirrors_the_usage_endpoint(
    adapter: ClaudeAdapter, bundle: dict[str, Any], sim: Simulator, account: SimAccount
) -> None:
    sim.set_quota(account.id, "seven_day", used_percent=42, reset_in_s=86400)
    now = sim.clock.now()
    plan, windows = await adapter.read_quota(bundle, now)
    assert plan == "max"
    assert [(w.window, w.main) for w in windows] == [("five_hour", True), ("seven_day", True)]
    seven_day = windows[1]
    assert seven_day.used_percent == 42 and seven_day.window_seconds == 7 * 86400
    assert seven_day.resets_at == pytest.approx(now + 86400, abs=2)
    seen = sim.requests(endpoint="claude.usage")[-1]
    assert seen.headers["anthropic-beta"] == "oauth-2025-04-20"


async def test_read_profile(adapter: ClaudeAdapter, sim: Simulator) -> None:
    account = sim.create_account("claude", plan="pro")
    bundle = adapter.parse_credentials(account.credentials).bundle
    identity = await adapter.read_profile(bundle)
    assert identity.email == account.email and identity.plan == "pro"
    assert identity.subject == account.account_id


async def test_cat_1_models_come_from_the_upstream_model_list_page_by_page(
    adapter: ClaudeAdapter, sim: Simulator, bundle: dict[str, Any], account: SimAccount
) -> None:
    models = tuple(f"claude-m{index}-20260101" for index in range(1500))  # two pages of 1,000
    sim.update_account(account.id, models=models)
    assert await adapter.list_models(bundle) == list(models)
    calls = sim.requests(account_id=account.id, endpoint="claude.models")
    assert len(calls) == 2 and calls[0].headers["anthropic-version"] == "2023-06-01"
    assert "oauth-2025-04-20" in calls[0].headers["anthropic-beta"]


async def test_cat_1_the_built_in_list_stands_in_only_while_the_fallback_is_on(
    sim: Simulator, http: httpx.AsyncClient, bundle: dict[str, Any], account: SimAccount
) -> None:
    sim.update_account(account.id, models_listable=False)
    assert len(set(KNOWN_MODELS)) == len(KNOWN_MODELS)
    fallback = ClaudeAdapter(
        base_url=sim.claude_base_url,
        auth_url=sim.claude_auth_url,
        http=http,
        metadata_timeout=1,
        models=["claude-x"],
    )
    assert await fallback.list_models(bundle) == ["claude-x"]  # refused (403): the built-in list
    strict = ClaudeAdapter(
        base_url=sim.claude_base_url,
        auth_url=sim.claude_auth_url,
        http=http,
        metadata_timeout=1,
        models_fallback=False,
    )
    with pytest.raises(httpx.HTTPStatusError):
        await strict.list_models(bundle)


@pytest.mark.parametrize("paste", ["url", "code#state"])
async def test_login_with_a_pasted_code(
    adapter: ClaudeAdapter, http: httpx.AsyncClient, sim: Simulator, paste: str
) -> None:
    account = sim.create_account("claude")
    sim.prepare_login("claude", account.id)
    url, state, pkce = adapter.login().start_login()
    assert url.startswith(f"{sim.base_url}/oauth/authorize?code=true&client_id=9d1c250a-")
    assert "code_challenge_method=S256" in url and f"state={state}" in url
    redirect = await http.get(url)
    assert redirect.status_code == 302
    location = redirect.headers["location"]
    assert location.startswith("https://console.anthropic.com/oauth/code/callback?")
    if paste == "code#state":
        query = httpx.URL(location).params
        location = f"{query['code']}#{query['state']}"
    code = code_from_pasted(location, state)
    imported = await adapter.login().complete_login(code, state, pkce)
    current = sim.account(account.id)
    assert imported.provider == "claude"
    assert imported.bundle["access_token"] == current.access_token
    assert imported.bundle["refresh_token"] == current.refresh_token
    assert imported.identity.email == account.email and imported.identity.plan == "max"
    assert imported.identity.subject == account.account_id
    assert imported.bundle["subscription_type"] == "max"
    assert imported.bundle["scopes"] == ["user:inference", "user:profile", "user:sessions:claude_code"]
    assert imported.expires_at == pytest.approx(current.access_expires_at, abs=2)
    exchange = sim.requests(endpoint="claude.token")[-1]
    assert exchange.body["grant_type"] == "authorization_code" and exchange.body["state"] == state
    assert exchange.body["code_verifier"] == pkce.verifier
    assert exchange.body["redirect_uri"] == "https://console.anthropic.com/oauth/code/callback"
    with pytest.raises(RefreshFailed) as reused:  # codes are single use
        await adapter.login().complete_login(code, state, pkce)
    assert reused.value.permanent


async def test_login_with_a_wrong_verifier_is_refused(
    adapter: ClaudeAdapter, http: httpx.AsyncClient, sim: Simulator
) -> None:
    url, state, _pkce = adapter.login().start_login()
    location = (await http.get(url)).headers["location"]
    _, _, other = adapter.login().start_login()
    with pytest.raises(RefreshFailed) as refused:
        await adapter.login().complete_login(code_from_pasted(location, state), state, other)
    assert refused.value.permanent and refused.value.code == "invalid_grant"


def test_request_bodies_are_compact_json(adapter: ClaudeAdapter) -> None:
    request = stream_request(adapter, {"access_token": "t"}, {"model": MODEL, "system": "é"}, {}, bound=False)
    assert json.loads(request.content) == {"model": MODEL, "system": "é", "stream": True}
    assert request.headers["content-type"] == "application/json"
