"""Turn shapes the contract suite needs: parallel tool calls with their ids logged, and Antigravity
reading every spelling Google's JSON accepts (proto snake_case names, upper-case schema types)."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from sublane_sim import Behaviour, Simulator, parse_sse

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
NAMES = ["read_file", "list_dir"]
TWO_CALLS = Behaviour.ok(deltas=2, tool_call=True, tool_calls=2)
USER = {"role": "user", "content": "hi"}


def test_codex_two_function_calls_in_one_turn(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, TWO_CALLS)
    tools = [{"type": "function", "name": name, "parameters": SCHEMA} for name in NAMES]
    body = {
        "model": "gpt-5-codex",
        "stream": True,
        "store": False,
        "input": [{"type": "message", **USER}],
        "tools": tools,
    }
    headers = {"authorization": f"Bearer {account.access_token}", "chatgpt-account-id": account.account_id}
    response = http.post(f"{sim.codex_base_url}/codex/responses", json=body, headers=headers)
    final = parse_sse(response.text)[-1].data["response"]
    calls = [item for item in final["output"] if item["type"] == "function_call"]
    assert [call["name"] for call in calls] == NAMES
    assert all(json.loads(call["arguments"]) == {"path": "sim"} for call in calls)
    ids = [call["call_id"] for call in calls]
    assert len(set(ids)) == 2 and sim.requests(account_id=account.id)[-1].tool_call_ids == ids


def test_claude_two_tool_use_blocks_in_one_turn(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.script(account.id, TWO_CALLS)
    tools = [{"name": name, "input_schema": SCHEMA} for name in NAMES]
    body = {"model": "claude-opus-4-8", "max_tokens": 64, "stream": True, "messages": [USER], "tools": tools}
    headers = {
        "authorization": f"Bearer {account.access_token}",
        "anthropic-beta": "oauth-2025-04-20",
        "anthropic-version": "2023-06-01",
    }
    response = http.post(f"{sim.claude_base_url}/v1/messages?beta=true", json=body, headers=headers)
    events = [event.data for event in parse_sse(response.text)]
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    uses = [block for block in starts if block["type"] == "tool_use"]
    assert [block["name"] for block in uses] == NAMES
    stop = next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"]
    assert stop == "tool_use"
    ids = [block["id"] for block in uses]
    assert len(set(ids)) == 2 and sim.requests(account_id=account.id)[-1].tool_call_ids == ids


def test_antigravity_two_function_call_parts_in_one_chunk(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, TWO_CALLS)
    tools = [{"functionDeclarations": [{"name": name, "parameters": SCHEMA} for name in NAMES]}]
    body = {
        "project": account.project_id,
        "model": "gemini-3-flash",
        "requestId": "agent-1",
        "request": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": tools},
    }
    response = http.post(
        f"{sim.antigravity_base_url}/v1internal:streamGenerateContent?alt=sse",
        json=body,
        headers={"authorization": f"Bearer {account.access_token}"},
    )
    chunks: list[list[dict[str, Any]]] = [
        event.data["response"]["candidates"][0]["content"]["parts"] for event in parse_sse(response.text)
    ]
    with_calls = [parts for parts in chunks if any("functionCall" in part for part in parts)]
    assert len(with_calls) == 1  # parallel calls are parts of one chunk
    calls = [part["functionCall"] for part in with_calls[0]]
    assert [call["name"] for call in calls] == NAMES
    ids = [call["id"] for call in calls]
    assert len(set(ids)) == 2 and sim.requests(account_id=account.id)[-1].tool_call_ids == ids


def test_tool_calls_must_be_positive() -> None:
    with pytest.raises(ValueError, match="tool_calls"):
        Behaviour.ok(tool_call=True, tool_calls=0)


@pytest.mark.parametrize(
    ("field", "schema"),
    [
        ("parameters", {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}, "required": ["path"]}),
        ("parameters_json_schema", SCHEMA),  # proto JSON also takes a field's snake_case name
    ],
    ids=["gemini-upper-case-types", "snake-case-json-schema"],
)
def test_antigravity_arguments_follow_the_declared_schema(
    sim: Simulator, http: httpx.Client, field: str, schema: dict[str, Any]
) -> None:
    account = sim.create_account("antigravity")
    sim.script(account.id, Behaviour.ok(tool_call=True))
    body = {
        "project": account.project_id,
        "model": "gemini-3-flash",
        "requestId": "agent-1",
        "request": {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "read_file", field: schema}]}],
        },
    }
    response = http.post(
        f"{sim.antigravity_base_url}/v1internal:generateContent",
        json=body,
        headers={"authorization": f"Bearer {account.access_token}"},
    )
    parts = response.json()["response"]["candidates"][0]["content"]["parts"]
    assert [part["functionCall"]["args"] for part in parts if "functionCall" in part] == [{"path": "sim"}]


def test_antigravity_thinks_when_thoughts_are_asked_in_snake_case(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    config = {"thinking_config": {"include_thoughts": True, "thinking_budget": 512}}
    body = {
        "project": account.project_id,
        "model": "gemini-3-flash",
        "requestId": "agent-1",
        "request": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generation_config": config},
    }
    response = http.post(
        f"{sim.antigravity_base_url}/v1internal:generateContent",
        json=body,
        headers={"authorization": f"Bearer {account.access_token}"},
    )
    parts = response.json()["response"]["candidates"][0]["content"]["parts"]
    assert parts[0]["thought"] is True
    assert base64.b64decode(parts[0]["thoughtSignature"], validate=True).startswith(b"sim-thought-")
