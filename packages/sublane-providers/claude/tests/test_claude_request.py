"""Claude request building: header merge, beta flags, identity pass-through, faithful bodies."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sublane_provider_claude import count_tokens_url, messages_body, messages_url, upstream_headers

# What Claude Code 2.1.197 sent to a local gateway (shared/real-clients), header names as captured.
CLAUDE_CODE_HEADERS = {
    "Accept": "application/json",
    "Content-Type": "application/json",
    "User-Agent": "claude-cli/2.1.197 (external, sdk-cli)",
    "X-Claude-Code-Session-Id": "7c6c7643-f166-4fb5-8933-f9a2696e5690",
    "X-Stainless-Arch": "x64",
    "X-Stainless-Lang": "js",
    "X-Stainless-OS": "Linux",
    "X-Stainless-Package-Version": "0.94.0",
    "X-Stainless-Retry-Count": "0",
    "X-Stainless-Runtime": "node",
    "X-Stainless-Runtime-Version": "v26.3.0",
    "X-Stainless-Timeout": "600",
    "anthropic-beta": "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,"
    "context-management-2025-06-27,effort-2025-11-24",
    "anthropic-dangerous-direct-browser-access": "true",
    "anthropic-version": "2023-06-01",
    "x-api-key": "sk-sublane-member-key",
    "x-app": "cli",
    "Connection": "keep-alive",
    "Host": "127.0.0.1:18558",
    "Accept-Encoding": "gzip, deflate, br, zstd",
    "Content-Length": "76277",
    "Cookie": "session=abc",
}


def test_claude_code_headers_are_forwarded_with_our_bearer() -> None:
    headers = upstream_headers(CLAUDE_CODE_HEADERS, access_token="sk-ant-oat01-pool", bound=True)
    assert headers == {
        "user-agent": "claude-cli/2.1.197 (external, sdk-cli)",
        "x-claude-code-session-id": "7c6c7643-f166-4fb5-8933-f9a2696e5690",
        "x-stainless-arch": "x64",
        "x-stainless-lang": "js",
        "x-stainless-os": "Linux",
        "x-stainless-package-version": "0.94.0",
        "x-stainless-retry-count": "0",
        "x-stainless-runtime": "node",
        "x-stainless-runtime-version": "v26.3.0",
        "x-stainless-timeout": "600",
        "anthropic-dangerous-direct-browser-access": "true",
        "x-app": "cli",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,"
        "context-management-2025-06-27,effort-2025-11-24,oauth-2025-04-20",
        "authorization": "Bearer sk-ant-oat01-pool",
    }


def test_the_clients_own_credentials_and_hop_headers_never_go_upstream() -> None:
    client = {
        "X-Api-Key": "sk-sublane-member-key",
        "Authorization": "Bearer sk-sublane-member-key",
        "cookie": "a=b",
        "host": "gateway",
        "content-length": "12",
        "accept-encoding": "gzip",
        "connection": "keep-alive",
        "x-forwarded-for": "10.0.0.1",
        "proxy-authorization": "Basic eA==",
    }
    headers = upstream_headers(client, access_token="sk-ant-oat01-pool", bound=True)
    assert set(headers) == {"anthropic-version", "anthropic-beta", "authorization"}
    assert headers["authorization"] == "Bearer sk-ant-oat01-pool"
    assert "sk-sublane-member-key" not in json.dumps(headers)


def test_session_id_only_for_bound_calls() -> None:
    unbound = upstream_headers(CLAUDE_CODE_HEADERS, access_token="t", bound=False)
    assert "x-claude-code-session-id" not in unbound
    assert unbound["x-app"] == "cli"  # identity headers still pass


@pytest.mark.parametrize(
    ("client_betas", "expected"),
    [
        (None, "oauth-2025-04-20"),
        ("", "oauth-2025-04-20"),
        ("claude-code-20250219", "claude-code-20250219,oauth-2025-04-20"),
        ("oauth-2025-04-20,claude-code-20250219", "oauth-2025-04-20,claude-code-20250219"),
        ("dangerous-tool-use-2026-09-03,a, b,a", "dangerous-tool-use-2026-09-03,a, b,a,oauth-2025-04-20"),
        (" a , b,,a ,oauth-2025-04-20 ", " a , b,,a ,oauth-2025-04-20 "),
    ],
)
def test_client_4_beta_value_passes_byte_exact_plus_the_oauth_flag(
    client_betas: str | None, expected: str
) -> None:
    client = {} if client_betas is None else {"Anthropic-Beta": client_betas}
    assert upstream_headers(client, access_token="t", bound=False)["anthropic-beta"] == expected


def test_client_4_beta_header_lines_are_joined_in_order_without_dropping_any() -> None:
    client = {"anthropic-beta": "a,b", "Anthropic-Beta": "b,c"}
    assert (
        upstream_headers(client, access_token="t", bound=False)["anthropic-beta"]
        == "a,b,b,c,oauth-2025-04-20"
    )


def test_anthropic_version_is_the_clients_or_the_default() -> None:
    assert upstream_headers({}, access_token="t", bound=False)["anthropic-version"] == "2023-06-01"
    client = {"Anthropic-Version": "2024-01-01"}
    assert upstream_headers(client, access_token="t", bound=False)["anthropic-version"] == "2024-01-01"


def claude_code_body() -> dict[str, Any]:
    return {
        "model": "claude/claude-opus-4-8",
        "max_tokens": 64000,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": "…", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        ],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        "tools": [
            {"name": "Read", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}
        ],
        "metadata": {"user_id": '{"device_id":"d","account_uuid":"","session_id":"s"}'},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "temperature": 1,
        "tool_choice": {"type": "auto"},
        "stream": True,
    }


def test_messages_body_passes_everything_through_but_the_model() -> None:
    body = claude_code_body()
    original = copy.deepcopy(body)
    prepared = messages_body(body, model="claude-opus-4-8")
    assert prepared == dict(original, model="claude-opus-4-8")
    assert body == original  # the caller's body is not changed


def test_urls() -> None:
    assert messages_url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages?beta=true"
    assert messages_url("http://sim/") == "http://sim/v1/messages?beta=true"
    assert count_tokens_url("http://sim") == "http://sim/v1/messages/count_tokens?beta=true"
