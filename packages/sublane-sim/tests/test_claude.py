"""Claude routes: OAuth and API-key auth, SSE shape, cache accounting, limits, usage and profile."""

from __future__ import annotations

from typing import Any

import httpx

from sublane_sim import Behaviour, SimAccount, Simulator, parse_sse

VERSION = {"anthropic-version": "2023-06-01"}


def oauth(account: SimAccount, beta: str = "claude-code-20250219,oauth-2025-04-20") -> dict[str, str]:
    return {"authorization": f"Bearer {account.access_token}", "anthropic-beta": beta, **VERSION}


def body(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": "claude-opus-4-8",
        "max_tokens": 1024,
        "stream": True,
        "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
        "messages": [{"role": "user", "content": "hello there"}],
    }
    data.update(extra)
    return data


def test_stream_with_thinking_tool_use_and_usage(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.script(account.id, Behaviour.ok(deltas=3, tool_call=True))
    tools = [
        {
            "name": "Read",
            "description": "read a file",
            "input_schema": {
                "type": "object",
                "properties": {"file_path": {"type": "string"}},
                "required": ["file_path"],
            },
        }
    ]
    response = http.post(
        f"{sim.claude_base_url}/v1/messages?beta=true",
        json=body(thinking={"type": "enabled", "budget_tokens": 2048}, tools=tools),
        headers=oauth(account),
    )
    assert response.status_code == 200
    events = parse_sse(response.text)
    names = [e.name for e in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert [e.data["type"] for e in events] == names
    deltas = [e.data["delta"]["type"] for e in events if e.name == "content_block_delta"]
    assert deltas.count("thinking_delta") == 2 and deltas.count("signature_delta") == 1
    assert deltas.count("text_delta") == 3 and deltas.count("input_json_delta") >= 1
    starts = [e.data["content_block"]["type"] for e in events if e.name == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    partial = "".join(
        e.data["delta"]["partial_json"]
        for e in events
        if e.name == "content_block_delta" and e.data["delta"]["type"] == "input_json_delta"
    )
    assert partial == '{"file_path": "sim"}'
    final = events[-2].data
    assert final["delta"]["stop_reason"] == "tool_use"
    assert final["usage"]["output_tokens"] > 1
    start_usage = events[0].data["message"]["usage"]
    assert start_usage["cache_creation_input_tokens"] > 0 and start_usage["cache_read_input_tokens"] == 0
    assert response.headers["anthropic-ratelimit-unified-status"] == "allowed"
    assert response.headers["anthropic-ratelimit-unified-5h-utilization"] == "0"
    assert response.headers["request-id"].startswith("req_")


def test_cache_read_on_same_account_only(sim: Simulator, http: httpx.Client) -> None:
    first = sim.create_account("claude")
    second = sim.create_account("claude")
    url = f"{sim.claude_base_url}/v1/messages"

    def usage(account: SimAccount, **extra: Any) -> dict[str, Any]:
        events = parse_sse(http.post(url, json=body(**extra), headers=oauth(account)).text)
        result: dict[str, Any] = events[0].data["message"]["usage"]
        return result

    assert usage(first)["cache_read_input_tokens"] == 0
    longer = {
        "messages": [
            {"role": "user", "content": "hello there"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "and more"},
        ]
    }
    hit = usage(first, **longer)
    assert hit["cache_read_input_tokens"] > 0 and hit["cache_creation_input_tokens"] == 0
    assert usage(second, **longer)["cache_read_input_tokens"] == 0


def test_cost_4_a_cached_prefix_expires_after_its_lifetime(sim: Simulator, http: httpx.Client) -> None:
    """Anthropic's prompt cache: 5 minutes unused by default, an hour when a breakpoint asks for it."""
    account = sim.create_account("claude")
    url = f"{sim.claude_base_url}/v1/messages"

    def cached(**extra: Any) -> int:
        events = parse_sse(http.post(url, json=body(**extra), headers=oauth(account)).text)
        read: int = events[0].data["message"]["usage"]["cache_read_input_tokens"]
        return read

    assert cached() == 0
    sim.clock.advance(299)
    assert cached() > 0  # within the lifetime, which each use renews
    sim.clock.advance(301)
    assert cached() == 0  # expired
    marked = [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert cached(system=marked) == 0
    sim.clock.advance(3000)
    assert cached(system=marked) > 0


def test_oauth_requires_the_beta_flag(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    url = f"{sim.claude_base_url}/v1/messages"
    response = http.post(url, json=body(), headers=oauth(account, beta="claude-code-20250219"))
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert http.post(url, json=body(), headers=oauth(account)).status_code == 200


def test_api_key_path_and_bad_keys(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    url = f"{sim.claude_base_url}/v1/messages"
    ok = http.post(url, json=body(), headers={"x-api-key": account.api_key, **VERSION})
    assert ok.status_code == 200
    assert sim.requests(account_id=account.id)[-1].token_kind == "api_key"
    oauth_as_key = http.post(url, json=body(), headers={"x-api-key": account.access_token, **VERSION})
    assert oauth_as_key.status_code == 401
    assert oauth_as_key.json()["error"]["message"] == "invalid x-api-key"


def test_version_header_and_body_validation(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    url = f"{sim.claude_base_url}/v1/messages"
    headers = {"x-api-key": account.api_key}
    missing_version = http.post(url, json=body(), headers=headers)
    assert missing_version.status_code == 400
    assert "anthropic-version" in missing_version.json()["error"]["message"]
    headers.update(VERSION)
    no_max_tokens = {k: v for k, v in body().items() if k != "max_tokens"}
    assert http.post(url, json=no_max_tokens, headers=headers).status_code == 400
    unknown_model = http.post(url, json=body(model="claude-9"), headers=headers)
    assert unknown_model.status_code == 404
    assert unknown_model.json()["error"]["type"] == "not_found_error"


def test_expired_oauth_token(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.expire_access_tokens(account.id)
    response = http.post(f"{sim.claude_base_url}/v1/messages", json=body(), headers=oauth(account))
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]


def test_non_streaming_message(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    response = http.post(
        f"{sim.claude_base_url}/v1/messages", json=body(stream=False), headers=oauth(account)
    )
    message = response.json()
    assert message["type"] == "message" and message["stop_reason"] == "end_turn"
    assert message["content"][0]["type"] == "text" and message["content"][0]["text"]
    assert message["usage"]["output_tokens"] == 8


def test_quota_exhaustion_rejects_with_retry_after(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.set_quota(account.id, "five_hour", used_percent=85)
    warned = http.post(f"{sim.claude_base_url}/v1/messages", json=body(), headers=oauth(account))
    assert warned.headers["anthropic-ratelimit-unified-status"] == "allowed_warning"
    assert warned.headers["anthropic-ratelimit-unified-5h-utilization"] == "0.85"
    sim.set_quota(account.id, "five_hour", used_percent=100, reset_in_s=60)
    limited = http.post(f"{sim.claude_base_url}/v1/messages", json=body(), headers=oauth(account))
    assert limited.status_code == 429
    assert limited.json()["error"]["type"] == "rate_limit_error"
    assert 58 <= int(limited.headers["retry-after"]) <= 60
    assert limited.headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert limited.headers["anthropic-ratelimit-unified-5h-status"] == "rejected"
    assert limited.headers["anthropic-ratelimit-unified-representative-claim"] == "five_hour"
    usage = http.get(f"{sim.claude_base_url}/api/oauth/usage", headers=oauth(account)).json()
    assert usage["five_hour"]["utilization"] == 100.0
    assert usage["seven_day"]["utilization"] == 0.0
    assert usage["five_hour"]["resets_at"].endswith("+00:00")
    sim.advance_clock(61)
    assert (
        http.post(f"{sim.claude_base_url}/v1/messages", json=body(), headers=oauth(account)).status_code
        == 200
    )


def test_count_tokens_usage_and_profile(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude", plan="pro")
    counted = http.post(
        f"{sim.claude_base_url}/v1/messages/count_tokens?beta=true",
        json={"model": "claude-opus-4-8", "messages": [{"role": "user", "content": "hi"}]},
        headers=oauth(account),
    )
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
    profile = http.get(f"{sim.claude_base_url}/api/oauth/profile", headers=oauth(account)).json()
    assert profile["account"]["email"] == account.email
    assert profile["account"]["has_claude_pro"] is True
    assert profile["organization"]["uuid"] == account.organization_id
    no_beta = http.get(
        f"{sim.claude_base_url}/api/oauth/usage", headers={"authorization": oauth(account)["authorization"]}
    )
    assert no_beta.status_code == 401
    api_key = http.get(f"{sim.claude_base_url}/api/oauth/usage", headers={"x-api-key": account.api_key})
    assert api_key.status_code == 401


def test_head_root_for_claude_code(sim: Simulator, http: httpx.Client) -> None:
    assert http.head(f"{sim.claude_base_url}/").status_code == 200


def test_a_field_of_the_wrong_type_is_a_400(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    url = f"{sim.claude_base_url}/v1/messages"
    for field, bad in (("temperature", "hot"), ("thinking", 5), ("tools", {}), ("system", 3)):
        response = http.post(url, json=body(**{field: bad}), headers=oauth(account))
        assert response.status_code == 400, field
        assert response.json()["error"]["type"] == "invalid_request_error"
        assert response.json()["error"]["message"].startswith(f"{field}:")
