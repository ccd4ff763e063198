"""The Chat Completions chunks of one turn of an OpenAI-compatible server (vLLM, llama.cpp, Ollama).

A stream is ``data: {chat.completion.chunk}`` lines: a first chunk with the assistant role, the
reasoning as ``delta.reasoning_content`` (how vLLM and DeepSeek stream a reasoning model's
thoughts), the text as ``delta.content``, tool calls by ``index`` (the first piece with ``id`` and
``function.name``, then ``function.arguments`` fragments), a chunk with the ``finish_reason``, the
usage in one more chunk with empty ``choices`` when ``stream_options.include_usage`` asked for it,
and ``data: [DONE]``. A failure after the headers is a ``data: {"error": …}`` line (vLLM's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._content import sample_arguments, split_evenly, text_chunks
from ._stream import Event
from ._turns import Turn

__all__ = ["CompatPlan", "build_compat_plan", "compat_sse_encode"]

DONE = "[DONE]"


@dataclass(slots=True)
class CompatPlan:
    events: list[Event]
    failure: Callable[[], list[Event]]
    completion: dict[str, Any]
    success: str


def _pick_tools(body: dict[str, Any], count: int, wanted: str | None) -> list[tuple[str, dict[str, Any]]]:
    offered: list[tuple[str, dict[str, Any]]] = []
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            offered.append((function["name"], sample_arguments(function.get("parameters"))))
    offered = [pair for pair in offered if pair[0] == wanted] or offered or [("sim_tool", {})]
    return [offered[index % len(offered)] for index in range(count)]


def usage_json(turn: Turn) -> dict[str, Any]:
    usage = turn.usage
    assert usage is not None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.prompt_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def build_compat_plan(turn: Turn, body: dict[str, Any], completion_id: str, created: int) -> CompatPlan:
    behaviour = turn.behaviour
    rng = turn.rng
    usage = turn.usage
    assert usage is not None
    reasoning_deltas = behaviour.reasoning_deltas
    if reasoning_deltas is None:
        reasoning_deltas = 2 if body.get("reasoning_effort") not in (None, "none") else 0
    head = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": turn.model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    events = [Event(chunk({"role": "assistant", "content": ""}))]
    thoughts = text_chunks(rng, reasoning_deltas) if reasoning_deltas else []
    events += [Event(chunk({"reasoning_content": piece}), delta=True) for piece in thoughts]
    texts = text_chunks(rng, behaviour.deltas, behaviour.text)
    events += [Event(chunk({"content": piece}), delta=True) for piece in texts]
    calls: list[dict[str, Any]] = []
    tool_deltas = 0
    if behaviour.tool_call:
        for index, (name, arguments) in enumerate(
            _pick_tools(body, behaviour.tool_calls, behaviour.tool_name)
        ):
            call_id = f"call_sim{rng.getrandbits(96):024x}"
            first = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            events.append(Event(chunk({"tool_calls": [first]})))
            text = json.dumps(arguments)
            for piece in split_evenly(text, 3):
                tool_deltas += 1
                piece_delta = {"index": index, "function": {"arguments": piece}}
                events.append(Event(chunk({"tool_calls": [piece_delta]}), delta=True))
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": text}})
            turn.record.tool_call_ids.append(call_id)
    usage.reasoning_tokens = len(thoughts)
    usage.output_tokens = behaviour.output_tokens or (len(texts) + len(thoughts) + tool_deltas)
    incomplete = behaviour.kind == "incomplete"
    finish = "length" if incomplete else ("tool_calls" if calls else "stop")
    events.append(Event(chunk({}, finish), terminal=True))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        events.append(Event({**head, "choices": [], "usage": usage_json(turn)}))
    events.append(Event({}, DONE))
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if thoughts:
        message["reasoning_content"] = "".join(thoughts)
    if calls:
        message["tool_calls"] = calls
    completion = {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": turn.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage_json(turn),
    }

    def failure() -> list[Event]:
        message = behaviour.error_message or "The engine is overloaded; please retry."
        error = {"message": message, "type": "ServiceUnavailableError", "code": 503}
        return [Event({"error": error}), Event({}, DONE)]

    return CompatPlan(events, failure, completion, "incomplete" if incomplete else "completed")


def compat_sse_encode(event: Event) -> bytes:
    """An unnamed ``data:`` line; the ``[DONE]`` sentinel as it is (no JSON)."""
    if event.name == DONE:
        return b"data: [DONE]\n\n"
    payload = json.dumps(event.data, separators=(",", ":"), ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
