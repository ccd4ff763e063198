"""The Codex Responses event sequence for one turn (PROTOCOLS.md 1.4), shared by SSE and WebSocket."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._content import sample_arguments, split_evenly, text_chunks
from ._stream import Event
from ._turns import Turn

__all__ = ["CodexPlan", "build_codex_plan", "codex_sse_encoder", "codex_ws_encoder", "failure_message"]

_FAILURE_MESSAGES = {
    "server_is_overloaded": "Our servers are currently overloaded. Please try again later.",
    "slow_down": "Please slow down.",
    "rate_limit_exceeded": "Rate limit reached for requests. Please try again in 1.5s.",
    "context_length_exceeded": "Your input exceeds the context window of this model.",
    "insufficient_quota": "You exceeded your current quota.",
}


def failure_message(code: str) -> str:
    return _FAILURE_MESSAGES.get(code, "The model failed to generate a response.")


@dataclass(slots=True)
class CodexPlan:
    events: list[Event]
    failure: Callable[[], list[Event]]
    final: dict[str, Any]
    success: str


def _response_object(turn: Turn, body: dict[str, Any], response_id: str, created_at: int) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": turn.model,
        "output": [],
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", False)),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "service_tier": body.get("service_tier") or "auto",
        "store": False,
        "temperature": 1.0,
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
    }


def _functions(tools: Any, namespace: str | None = None) -> list[tuple[str, dict[str, Any], str | None]]:
    """(name, sample arguments, namespace) of the function tools, those inside namespaces included."""
    found: list[tuple[str, dict[str, Any], str | None]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        if tool.get("type") == "function":
            found.append((tool["name"], sample_arguments(tool.get("parameters")), namespace))
        elif tool.get("type") == "namespace" and namespace is None:
            found.extend(_functions(tool.get("tools"), tool["name"]))
    return found


def _pick_tools(
    body: dict[str, Any], count: int, wanted: str | None = None
) -> list[tuple[str, dict[str, Any], str | None]]:
    """`count` (name, arguments, namespace) triples: the request's top-level function tools in turn
    (cycling), or the one named `wanted` (a namespaced one too) when offered."""
    every = _functions(body.get("tools"))
    named = [triple for triple in every if triple[0] == wanted]
    offered = named or [triple for triple in every if triple[2] is None] or [("sim_tool", {}, None)]
    return [offered[index % len(offered)] for index in range(count)]


def build_codex_plan(
    turn: Turn, body: dict[str, Any], response_id: str, created_at: int, *, generate: bool = True
) -> CodexPlan:
    """Events for a created → (reasoning) → message → (function call) → terminal turn.

    With `generate=False` (a WebSocket prewarm) only `created` and an empty `completed` are sent.
    """
    behaviour = turn.behaviour
    rng = turn.rng
    response = _response_object(turn, body, response_id, created_at)
    events: list[Event] = [
        Event({"type": "response.created", "response": dict(response)}, "response.created"),
        Event({"type": "response.in_progress", "response": dict(response)}, "response.in_progress"),
    ]
    output: list[dict[str, Any]] = []
    reasoning_deltas = 0
    text_deltas = 0
    argument_deltas = 0
    if generate:
        wants_reasoning = (
            bool(body.get("reasoning")) and (body.get("reasoning") or {}).get("effort") != "none"
        )
        reasoning_deltas = behaviour.reasoning_deltas if behaviour.reasoning_deltas is not None else 0
        if behaviour.reasoning_deltas is None and wants_reasoning:
            reasoning_deltas = 2
        include = body.get("include") or []
        if reasoning_deltas:
            item_id = f"rs_{turn.account.id}_{rng.getrandbits(48):012x}"
            chunks = text_chunks(rng, reasoning_deltas)
            summary = "".join(chunks)
            index = len(output)
            item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
            events.append(_item_event("response.output_item.added", index, item))
            part_ref = {"item_id": item_id, "output_index": index, "summary_index": 0}
            events.append(
                Event(
                    {"type": "response.reasoning_summary_part.added", **part_ref,
                     "part": {"type": "summary_text", "text": ""}},
                    "response.reasoning_summary_part.added",
                )
            )  # fmt: skip
            for chunk in chunks:
                events.append(
                    Event(
                        {"type": "response.reasoning_summary_text.delta", **part_ref, "delta": chunk},
                        "response.reasoning_summary_text.delta",
                        delta=True,
                    )
                )
            events.append(
                Event(
                    {"type": "response.reasoning_summary_text.done", **part_ref, "text": summary},
                    "response.reasoning_summary_text.done",
                )
            )
            done_part = {"type": "summary_text", "text": summary}
            events.append(
                Event(
                    {"type": "response.reasoning_summary_part.done", **part_ref, "part": done_part},
                    "response.reasoning_summary_part.done",
                )
            )
            done_item = {"id": item_id, "type": "reasoning", "summary": [done_part]}
            if "reasoning.encrypted_content" in include:
                done_item["encrypted_content"] = f"gAAAAsim{rng.getrandbits(128):032x}"
            events.append(_item_event("response.output_item.done", index, done_item))
            output.append(done_item)

        chunks = text_chunks(rng, behaviour.deltas, behaviour.text)
        text_deltas = len(chunks)
        text = "".join(chunks)
        index = len(output)
        msg_id = f"msg_{turn.account.id}_{rng.getrandbits(48):012x}"
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        events.append(_item_event("response.output_item.added", index, message))
        ref = {"item_id": msg_id, "output_index": index, "content_index": 0}
        empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        events.append(
            Event(
                {"type": "response.content_part.added", **ref, "part": empty_part},
                "response.content_part.added",
            )
        )
        for chunk in chunks:
            events.append(
                Event(
                    {"type": "response.output_text.delta", **ref, "delta": chunk, "logprobs": []},
                    "response.output_text.delta",
                    delta=True,
                )
            )
        events.append(
            Event(
                {"type": "response.output_text.done", **ref, "text": text, "logprobs": []},
                "response.output_text.done",
            )
        )
        full_part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        events.append(
            Event(
                {"type": "response.content_part.done", **ref, "part": full_part}, "response.content_part.done"
            )
        )
        done_message = dict(message, status="completed", content=[full_part])
        events.append(_item_event("response.output_item.done", index, done_message))
        output.append(done_message)

        if behaviour.tool_call:
            for name, arguments, namespace in _pick_tools(body, behaviour.tool_calls, behaviour.tool_name):
                arguments_text = json.dumps(arguments)
                index = len(output)
                fc_id = f"fc_{turn.account.id}_{rng.getrandbits(48):012x}"
                call = {
                    "id": fc_id,
                    "type": "function_call",
                    "status": "in_progress",
                    "call_id": f"call_{rng.getrandbits(64):016x}",
                    "name": name,
                    "arguments": "",
                }
                if namespace is not None:
                    call["namespace"] = namespace
                events.append(_item_event("response.output_item.added", index, call))
                pieces = split_evenly(arguments_text, 3)
                argument_deltas += len(pieces)
                for piece in pieces:
                    events.append(
                        Event(
                            {"type": "response.function_call_arguments.delta", "item_id": fc_id,
                             "output_index": index, "delta": piece},
                            "response.function_call_arguments.delta",
                            delta=True,
                        )
                    )  # fmt: skip
                events.append(
                    Event(
                        {"type": "response.function_call_arguments.done", "item_id": fc_id,
                         "output_index": index, "name": name, "arguments": arguments_text},
                        "response.function_call_arguments.done",
                    )
                )  # fmt: skip
                done_call = dict(call, status="completed", arguments=arguments_text)
                events.append(_item_event("response.output_item.done", index, done_call))
                output.append(done_call)
                turn.record.tool_call_ids.append(call["call_id"])

    usage = turn.usage
    assert usage is not None
    usage.reasoning_tokens = reasoning_deltas
    usage.output_tokens = text_deltas + reasoning_deltas + argument_deltas
    if behaviour.output_tokens is not None:
        usage.output_tokens = behaviour.output_tokens
        usage.reasoning_tokens = min(usage.reasoning_tokens, usage.output_tokens)
    if not generate:
        usage.output_tokens = usage.reasoning_tokens = 0
    usage_json = {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.prompt_tokens + usage.output_tokens,
    }
    incomplete = behaviour.kind == "incomplete"
    final = dict(
        response, status="incomplete" if incomplete else "completed", output=output, usage=usage_json
    )
    if incomplete:
        final["incomplete_details"] = {"reason": "max_output_tokens"}
        terminal = "response.incomplete"
    else:
        terminal = "response.completed"
    events.append(Event({"type": terminal, "response": final}, terminal, terminal=True))

    def failure() -> list[Event]:
        code = behaviour.error_code or "server_is_overloaded"
        message = behaviour.error_message or failure_message(code)
        if behaviour.top_level_error:
            return [Event({"type": "error", "code": code, "message": message, "param": None}, "error")]
        failed = dict(response, status="failed", output=output, error={"code": code, "message": message})
        return [Event({"type": "response.failed", "response": failed}, "response.failed")]

    return CodexPlan(events, failure, final, "incomplete" if incomplete else "completed")


def _item_event(kind: str, index: int, item: dict[str, Any]) -> Event:
    return Event({"type": kind, "output_index": index, "item": item}, kind)


def codex_sse_encoder() -> Callable[[Event], bytes]:
    """SSE framing with a per-stream `sequence_number` added to every event."""
    counter = 0

    def encode(event: Event) -> bytes:
        nonlocal counter
        data = dict(event.data, sequence_number=counter)
        counter += 1
        payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        return f"event: {event.name}\ndata: {payload}\n\n".encode()

    return encode


def codex_ws_encoder() -> Callable[[Event], str]:
    counter = 0

    def encode(event: Event) -> str:
        nonlocal counter
        data = dict(event.data, sequence_number=counter)
        counter += 1
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    return encode
