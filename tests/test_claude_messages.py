"""Anthropic Messages through SubLane, served by pooled Claude accounts, against the simulator."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator

import anthropic
import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour, parse_sse

MODEL = "claude-sonnet-4-6"
BODY = {
    "model": MODEL,
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "say hi"}],
    "stream": True,
}
_clients: list[anthropic.Anthropic] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def _sdk(pool: Pool, key: str | None = None) -> anthropic.Anthropic:
    client = anthropic.Anthropic(
        base_url=pool.gateway.url, api_key=key or pool.key, max_retries=0, timeout=30
    )
    _clients.append(client)
    return client


def _claude_pool(make_pool: Callable[..., Pool], **settings: object) -> Pool:
    return make_pool(provider="claude", **settings)


def test_messages_stream_is_relayed_with_a_request_id(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    response = pool.client().post(
        "/v1/messages?beta=true", json=BODY, headers={"anthropic-version": "2023-06-01"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"].startswith("req_")
    events = [event.data["type"] for event in parse_sse(response.text)]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    record = pool.finished[-1]
    assert record.protocol == "messages" and record.provider == "claude" and record.outcome == "success"
    assert record.first_token_ms is not None and record.input_tokens is not None


def test_upstream_gets_oauth_bearer_and_merged_beta_flags(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    headers = {
        "x-api-key": pool.key,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
        "x-app": "cli",
        "user-agent": "claude-cli/2.1.197 (external, sdk-cli)",
        "x-claude-code-session-id": "session-1",
    }
    client = pool.gateway.client()
    assert client.post("/v1/messages?beta=true", json=BODY, headers=headers).status_code == 200
    upstream = pool.sim.requests(account_id=pool.sim_accounts[0].id)[-1]
    assert upstream.headers["authorization"] == f"Bearer {pool.sim_accounts[0].access_token}"
    betas = upstream.headers["anthropic-beta"].split(",")
    assert (
        betas[:2] == ["claude-code-20250219", "interleaved-thinking-2025-05-14"]
        and "oauth-2025-04-20" in betas
    )
    assert upstream.headers["x-app"] == "cli"
    assert "x-api-key" not in upstream.headers  # the member's key never goes upstream


def test_aff_1_claude_code_session_keeps_a_conversation_on_one_account(
    make_pool: Callable[..., Pool],
) -> None:
    pool = _claude_pool(make_pool, accounts=2)
    client = pool.client()
    user_id = json.dumps({"device_id": "d", "account_uuid": "", "session_id": "abc-123"})
    for _ in range(3):
        client.post("/v1/messages", json={**BODY, "metadata": {"user_id": user_id}})
    for _ in range(3):
        client.post("/v1/messages", json=BODY, headers={"x-claude-code-session-id": "other"})
    served = [record.account_id for record in pool.sim.requests(endpoint="claude.messages")]
    assert len(set(served[:3])) == 1 and len(set(served[3:])) == 1 and served[0] != served[3]


def test_anthropic_sdk_streaming_tools_and_thinking(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True, reasoning_deltas=2, deltas=3))
    tools = [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object",
              "properties": {"path": {"type": "string"}}, "required": ["path"]}}]  # fmt: skip
    with _sdk(pool).messages.stream(
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": "read a.txt"}],
        tools=tools,  # type: ignore[arg-type]
        thinking={"type": "enabled", "budget_tokens": 512},
    ) as stream:
        final = stream.get_final_message()
    kinds = [block.type for block in final.content]
    assert "tool_use" in kinds and "thinking" in kinds
    assert final.usage.input_tokens > 0


def test_anthropic_sdk_non_streaming_and_count_tokens(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    message = _sdk(pool).messages.create(
        model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content and message.stop_reason in ("end_turn", "max_tokens")
    counted = _sdk(pool).messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert counted.input_tokens > 0
    assert [record.operation for record in pool.finished] == ["messages", "count_tokens"]


def test_errors_come_in_anthropic_shape(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    with pytest.raises(anthropic.AuthenticationError):
        _sdk(pool, "sl_nope").messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(anthropic.NotFoundError):
        _sdk(pool).messages.create(
            model="gpt-5-codex", max_tokens=16, messages=[{"role": "user", "content": "x"}]
        )
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(429, retry_after="9"))
    response = pool.client().post("/v1/messages", json=BODY)
    assert response.status_code == 429
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert body["error"]["code"] == "upstream_rate_limited" and response.headers["retry-after"] == "9"
    again = pool.client().post("/v1/messages", json=BODY)
    assert again.json()["error"]["code"] == "account_cooling"  # COOL-1 for Claude accounts too


def test_a_stream_that_fails_with_overload_is_an_error_and_counts(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.overload(2))
    response = pool.client().post("/v1/messages", json=BODY)
    assert response.status_code == 200 and "overloaded_error" in response.text
    assert pool.finished[-1].outcome == "error" and pool.finished[-1].upstream_status == 200


def test_hist_token_mapping_counts_cache_reads_and_writes_as_input(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.ok(input_tokens=100, cached_tokens=60, output_tokens=7)
    )
    pool.client().post("/v1/messages", json=BODY)
    record = pool.finished[-1]
    assert record.cached_tokens == 60
    assert record.input_tokens is not None and record.input_tokens >= 100
    assert record.output_tokens == 7


def test_claude_import_reads_the_profile_for_identity(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool, accounts=0)
    upstream = pool.sim.create_account("claude", email="team-max@example.test", plan="max")
    created = pool.admin.post(
        "/api/accounts/import",
        json={"provider": "claude", "name": "max", "credentials": upstream.credentials},
    )
    assert created.status_code == 201, created.text
    assert created.json()["identity"]["email"] == "team-max@example.test"
    assert created.json()["identity"]["plan"] == "max"


def test_cred_2_claude_has_no_fallback_after_a_failed_refresh(make_pool: Callable[..., Pool]) -> None:
    from sublane_sim import RefreshOutcome

    pool = _claude_pool(make_pool, account_options={"access_ttl_s": 100})  # inside the 2-minute margin
    pool.sim.script_refresh(pool.sim_accounts[0].id, RefreshOutcome(kind="error", status=500))
    refused = pool.client().post("/v1/messages", json=BODY)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "account_refresh_failed"
    assert "retry-after" in refused.headers
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 0


def test_cat_2_an_anthropic_alias_is_served_and_goes_upstream_as_sent(make_pool: Callable[..., Pool]) -> None:
    pool = _claude_pool(make_pool)
    with warnings.catch_warnings():  # the SDK's own notice that these aliases are old models
        warnings.simplefilter("ignore", DeprecationWarning)
        message = _sdk(pool).messages.create(
            model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": "say hi"}]
        )
        streamed = _sdk(pool).messages.create(
            model="claude-opus-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        events = [event.type for event in streamed]
    assert message.type == "message" and message.content
    upstream = pool.sim.requests(endpoint="claude.messages")
    assert [r.body["model"] for r in upstream] == ["claude-haiku-4-5", "claude-opus-4-5"]  # as sent
    assert events[-1] == "message_stop"
    listed = {model["id"] for model in pool.client().get("/v1/models").json()["data"]}
    assert "claude-haiku-4-5-20251001" in listed and "claude-haiku-4-5" not in listed  # CAT-3: native ids
    unknown = pool.client().post("/v1/messages", json={**BODY, "model": "claude-sonnet-9-9"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
