"""Namespaced tools (the Codex CLI's ``multi_agent_v1``) across providers: flattened on the way
out, their calls given their ``namespace`` back on the way in."""

from __future__ import annotations

from typing import Any

from sublane_protocols._hub import namespaced_tools, portable_tools, restore_namespaces

BODY: dict[str, Any] = {
    "model": "m",
    "tools": [
        {"type": "function", "name": "exec_command", "parameters": {}},
        {
            "type": "namespace",
            "name": "multi_agent_v1",
            "tools": [
                {"type": "function", "name": "spawn_agent", "parameters": {}},
                {"type": "function", "name": "close_agent", "parameters": {}},
            ],
        },
    ],
}


def test_xlat_2_namespaced_tools_are_flattened_and_their_calls_get_the_namespace_back() -> None:
    assert [tool["name"] for tool in portable_tools(BODY)["tools"]] == [
        "exec_command",
        "spawn_agent",
        "close_agent",
    ]
    namespaces = namespaced_tools(BODY)
    assert namespaces == {"spawn_agent": "multi_agent_v1", "close_agent": "multi_agent_v1"}
    call = {"type": "function_call", "name": "close_agent", "call_id": "c", "arguments": "{}"}
    plain = {"type": "function_call", "name": "exec_command", "call_id": "d", "arguments": "{}"}
    added = restore_namespaces({"type": "response.output_item.added", "item": call}, namespaces)
    assert added["item"]["namespace"] == "multi_agent_v1" and "namespace" not in call  # a copy
    kept = restore_namespaces({"type": "response.output_item.done", "item": plain}, namespaces)
    assert "namespace" not in kept["item"]
    completed = restore_namespaces(
        {"type": "response.completed", "response": {"output": [plain, call]}}, namespaces
    )
    assert [item.get("namespace") for item in completed["response"]["output"]] == [None, "multi_agent_v1"]
    assert namespaced_tools({"tools": [{"type": "namespace", "name": 5, "tools": "x"}]}) == {}
