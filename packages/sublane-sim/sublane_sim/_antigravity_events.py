"""Antigravity `v1internal` stream chunks for one turn (PROTOCOLS.md 3.4)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._content import sample_arguments, text_chunks
from ._google_errors import rpc_error
from ._stream import Event
from ._turns import Turn

__all__ = ["AntigravityPlan", "build_antigravity_plan", "sse_encode"]


@dataclass(slots=True)
class AntigravityPlan:
    events: list[Event]
    failure: Callable[[], list[Event]]
    aggregate: dict[str, Any]
    success: str


def _pick_functions(
    request: dict[str, Any], count: int, wanted: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """`count` (name, args) pairs: the request's function declarations in turn (cycling), or the
    one named `wanted` when declared."""
    offered: list[tuple[str, dict[str, Any]]] = []
    for tool in request.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        for declaration in tool.get("functionDeclarations") or []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                # proto JSON: the field's original snake_case name is as valid as its camelCase one
                schema = (
                    declaration.get("parameters")
                    or declaration.get("parametersJsonSchema")
                    or declaration.get("parameters_json_schema")
                )
                offered.append((declaration["name"], sample_arguments(schema)))
    offered = [pair for pair in offered if pair[0] == wanted] or offered or [("sim_tool", {})]
    return [offered[index % len(offered)] for index in range(count)]


def _field(obj: dict[str, Any], camel: str) -> Any:
    """A field by its JSON name or its proto (snake_case) name: Google's JSON accepts both."""
    if camel in obj:
        return obj[camel]
    return obj.get("".join("_" + char.lower() if char.isupper() else char for char in camel))


def _answer_text(scripted: str | None, config: Any) -> str | None:
    """The scripted text; else, when the request asks for JSON of a schema (``responseMimeType``
    ``application/json`` with ``responseJsonSchema``/``responseSchema``), an object of that schema,
    as the model would write (the Gemini CLI's routing classifier parses it); else ``None``."""
    if scripted is not None or not isinstance(config, dict):
        return scripted
    if _field(config, "responseMimeType") != "application/json":
        return None
    schema = _field(config, "responseJsonSchema") or _field(config, "responseSchema")
    return json.dumps(sample_arguments(schema)) if isinstance(schema, dict) else None


def build_antigravity_plan(
    turn: Turn, body: dict[str, Any], response_id: str, created: str
) -> AntigravityPlan:
    behaviour = turn.behaviour
    rng = turn.rng
    usage = turn.usage
    assert usage is not None
    request = body.get("request") if isinstance(body.get("request"), dict) else {}
    assert isinstance(request, dict)
    config = _field(request, "generationConfig") or {}
    thinking = _field(config, "thinkingConfig") if isinstance(config, dict) else None
    wants_thoughts = isinstance(thinking, dict) and bool(_field(thinking, "includeThoughts"))
    thought_deltas = behaviour.reasoning_deltas if behaviour.reasoning_deltas is not None else 0
    if behaviour.reasoning_deltas is None and wants_thoughts:
        thought_deltas = 2
    trace_id = f"{rng.getrandbits(64):016x}"

    def chunk(parts: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        response: dict[str, Any] = {"candidates": [candidate]}
        if extra:
            candidate.update(extra.get("candidate", {}))
            response.update(extra.get("response", {}))
        response.update({"modelVersion": turn.model, "responseId": response_id, "createTime": created})
        return {"response": response, "traceId": trace_id, "metadata": {}}

    events: list[Event] = []
    all_parts: list[dict[str, Any]] = []
    thoughts = text_chunks(rng, thought_deltas) if thought_deltas else []
    # thought signatures are proto bytes: base64 on the wire
    signature = base64.b64encode(b"sim-thought-" + rng.getrandbits(192).to_bytes(24, "big")).decode("ascii")
    for index, piece in enumerate(thoughts):
        part: dict[str, Any] = {"text": piece, "thought": True}
        if index == len(thoughts) - 1:
            part["thoughtSignature"] = signature
        events.append(Event(chunk([part]), delta=True))
    if thoughts:
        all_parts.append({"text": "".join(thoughts), "thought": True, "thoughtSignature": signature})
    texts = text_chunks(rng, behaviour.deltas, _answer_text(behaviour.text, config))
    for piece in texts:
        events.append(Event(chunk([{"text": piece}]), delta=True))
    all_parts.append({"text": "".join(texts)})
    calls = 0
    if behaviour.tool_call:
        # parallel calls come as parts of one chunk, as Gemini sends them
        parts: list[dict[str, Any]] = []
        for name, arguments in _pick_functions(request, behaviour.tool_calls, behaviour.tool_name):
            call_id = f"call_sim{rng.getrandbits(64):016x}"
            parts.append({"functionCall": {"name": name, "args": arguments, "id": call_id}})
            turn.record.tool_call_ids.append(call_id)
        events.append(Event(chunk(parts), delta=True))
        all_parts.extend(parts)
        calls = len(parts)
    usage.reasoning_tokens = thought_deltas
    usage.output_tokens = behaviour.output_tokens or (len(texts) + calls)
    usage_json = {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "thoughtsTokenCount": usage.reasoning_tokens,
        "cachedContentTokenCount": usage.cached_tokens,
        "totalTokenCount": usage.prompt_tokens + usage.output_tokens + usage.reasoning_tokens,
    }
    finish = "MAX_TOKENS" if behaviour.kind == "incomplete" else "STOP"
    final_extra = {"candidate": {"finishReason": finish}, "response": {"usageMetadata": usage_json}}
    events.append(Event(chunk([{"text": ""}], final_extra), terminal=True))
    aggregate = chunk(all_parts, final_extra)

    def failure() -> list[Event]:
        message = behaviour.error_message or "The model is overloaded. Please try again later."
        return [Event(rpc_error(503, message))]

    return AntigravityPlan(
        events, failure, aggregate, "incomplete" if finish == "MAX_TOKENS" else "completed"
    )


def sse_encode(event: Event) -> bytes:
    """`data:`-only SSE, `\\r\\n` line ends as some Google front ends send them."""
    return (
        b"data: " + json.dumps(event.data, separators=(",", ":"), ensure_ascii=False).encode() + b"\r\n\r\n"
    )
