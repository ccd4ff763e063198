"""The Claude Messages event sequence for one turn (PROTOCOLS.md 2.4)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._content import sample_arguments, split_evenly, text_chunks
from ._stream import Event
from ._turns import Turn

__all__ = ["ClaudePlan", "build_claude_plan", "claude_sse_encode"]


@dataclass(slots=True)
class ClaudePlan:
    events: list[Event]
    failure: Callable[[], list[Event]]
    message: dict[str, Any]
    success: str


def _usage_json(turn: Turn) -> dict[str, Any]:
    usage = turn.usage
    assert usage is not None
    return {
        "input_tokens": usage.prompt_tokens - usage.cached_tokens - usage.cache_creation_tokens,
        "cache_creation_input_tokens": usage.cache_creation_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_creation_tokens - usage.cache_creation_1h_tokens,
            "ephemeral_1h_input_tokens": usage.cache_creation_1h_tokens,
        },
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens,
        "service_tier": "standard",
    }


def _pick_tools(
    body: dict[str, Any], count: int, wanted: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """`count` (name, input) pairs: the request's client tools in turn (cycling), or the one named
    `wanted` when offered."""
    offered = [
        (tool["name"], sample_arguments(tool.get("input_schema")))
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and "input_schema" in tool
    ]
    offered = [pair for pair in offered if pair[0] == wanted] or offered or [("sim_tool", {})]
    return [offered[index % len(offered)] for index in range(count)]


def build_claude_plan(turn: Turn, body: dict[str, Any], message_id: str) -> ClaudePlan:
    behaviour = turn.behaviour
    rng = turn.rng
    usage = turn.usage
    assert usage is not None
    thinking = body.get("thinking")
    wants_thinking = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    thinking_deltas = behaviour.reasoning_deltas if behaviour.reasoning_deltas is not None else 0
    if behaviour.reasoning_deltas is None and wants_thinking:
        thinking_deltas = 2
    blocks: list[dict[str, Any]] = []
    block_events: list[Event] = []

    def add(event: dict[str, Any], delta: bool = False) -> None:
        block_events.append(Event(event, event["type"], delta=delta))

    if thinking_deltas:
        chunks = text_chunks(rng, thinking_deltas)
        signature = f"EqSim{rng.getrandbits(192):048x}"
        index = len(blocks)
        add({"type": "content_block_start", "index": index,
             "content_block": {"type": "thinking", "thinking": "", "signature": ""}})  # fmt: skip
        for chunk in chunks:
            add({"type": "content_block_delta", "index": index,
                 "delta": {"type": "thinking_delta", "thinking": chunk}}, delta=True)  # fmt: skip
        add({"type": "content_block_delta", "index": index,
             "delta": {"type": "signature_delta", "signature": signature}})  # fmt: skip
        add({"type": "content_block_stop", "index": index})
        blocks.append({"type": "thinking", "thinking": "".join(chunks), "signature": signature})

    chunks = text_chunks(rng, behaviour.deltas, behaviour.text)
    index = len(blocks)
    add({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
    for chunk in chunks:
        add(
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}},
            True,
        )
    add({"type": "content_block_stop", "index": index})
    blocks.append({"type": "text", "text": "".join(chunks)})
    tool_deltas = 0
    if behaviour.tool_call:
        for name, arguments in _pick_tools(body, behaviour.tool_calls, behaviour.tool_name):
            tool_id = f"toolu_sim{rng.getrandbits(96):024x}"
            index = len(blocks)
            block = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
            add({"type": "content_block_start", "index": index, "content_block": block})
            pieces = split_evenly(json.dumps(arguments), 3)
            tool_deltas += len(pieces)
            for piece in pieces:
                add({"type": "content_block_delta", "index": index,
                     "delta": {"type": "input_json_delta", "partial_json": piece}}, delta=True)  # fmt: skip
            add({"type": "content_block_stop", "index": index})
            blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": arguments})
            turn.record.tool_call_ids.append(tool_id)

    usage.reasoning_tokens = thinking_deltas
    usage.output_tokens = behaviour.output_tokens or (len(chunks) + thinking_deltas + tool_deltas)
    incomplete = behaviour.kind == "incomplete"
    stop_reason = "max_tokens" if incomplete else ("tool_use" if behaviour.tool_call else "end_turn")
    usage_json = _usage_json(turn)
    start_usage = dict(usage_json, output_tokens=1)
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    final_delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
    verdicts = behaviour.safeguard_results if "safeguards" in body else None
    if verdicts is not None:  # asked for (the request's ``safeguards``) and scripted
        final_delta["safeguard_results"] = verdicts
    events = [
        Event({"type": "message_start", "message": message}, "message_start"),
        Event({"type": "ping"}, "ping"),
        *block_events,
        Event(
            {
                "type": "message_delta",
                "delta": final_delta,
                "usage": {k: v for k, v in usage_json.items() if k != "service_tier"},
            },
            "message_delta",
            terminal=True,
        ),
        Event({"type": "message_stop"}, "message_stop"),
    ]
    final = dict(message, content=blocks, stop_reason=stop_reason, usage=usage_json)
    if verdicts is not None:
        final["safeguard_results"] = verdicts

    def failure() -> list[Event]:
        error = {
            "type": behaviour.error_code or "overloaded_error",
            "message": behaviour.error_message or "Overloaded",
        }
        return [Event({"type": "error", "error": error}, "error")]

    return ClaudePlan(events, failure, final, "incomplete" if incomplete else "completed")


def claude_sse_encode(event: Event) -> bytes:
    payload = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {event.name}\ndata: {payload}\n\n".encode()
