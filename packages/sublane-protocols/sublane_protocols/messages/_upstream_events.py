"""Claude's Messages stream (and JSON answer) as hub (Responses) events.

| Claude | Responses |
| --- | --- |
| `message_start` | `response.created`, `response.in_progress` |
| `text` block, `text_delta` | a `message` item: `content_part.added`, `output_text.delta`…, the `.done`s |
| `thinking` block, `thinking_delta` | a `reasoning` item with one summary part (`reasoning_summary_*`) |
| `signature_delta`, `redacted_thinking` blocks | dropped (XLAT-2) |
| `tool_use` block, `input_json_delta` | a `function_call` item (`call_id` = the tool_use id), its deltas |
| `tool_use` of a tool declared `custom` | a `custom_tool_call` item; the `{"input": …}` JSON is buffered |
| | and its string sent as one input delta |
| `message_delta` | the stop reason and the cumulative output token count |
| `message_stop` | `response.completed`, or `response.incomplete`: `max_output_tokens` for `max_tokens` and |
| | `model_context_window_exceeded`, `content_filter` for `refusal` |
| `error` | `response.failed`: `overloaded_error` → `server_is_overloaded`, `rate_limit_error` → |
| | `rate_limit_exceeded`, anything else `upstream_error` |
| `ping`, `citations_delta`, unknown events | nothing |

Usage: `input_tokens` = input + cache read + cache creation (Claude's `input_tokens` excludes both),
`cached_tokens` = cache read, `cache_write_tokens` = cache creation, `output_tokens` as Claude
counts it (thinking included), `reasoning_tokens` from `output_tokens_details.thinking_tokens` when
Claude reports it, else 0.

Item ids are derived from Claude's message id (`msg_01…` → `resp_01…`, `msg_01…_0`, `rs_01…_1`,
`fc_01…_2`), so one answer always maps to the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sublane_core import new_hex_id
from sublane_protocols._hub import custom_tool_names
from sublane_protocols.messages._shape import count, dumps, text_field
from sublane_protocols.messages._shape import field as get

_INCOMPLETE: Final = {
    "max_tokens": "max_output_tokens",
    "model_context_window_exceeded": "max_output_tokens",
    "refusal": "content_filter",
}
_ERROR_CODES: Final = {"overloaded_error": "server_is_overloaded", "rate_limit_error": "rate_limit_exceeded"}


@dataclass(slots=True)
class _Block:
    """One Claude content block on its way to becoming a Responses output item."""

    kind: str  # "text" | "reasoning" | "function_call" | "custom_tool_call"
    call_id: str = ""
    name: str = ""
    output_index: int | None = None  # None until the item is announced
    item_id: str = ""
    parts: list[str] = field(default_factory=list)


class MessagesEvents:
    """Claude SSE payloads in (decoded), Responses events out, for one call."""

    def __init__(self, request: Mapping[str, Any], *, model: str, clock: Callable[[], float]) -> None:
        self._model = model
        self._custom = custom_tool_names(request)
        self._echo = _request_echo(request)
        self._created_at = int(clock())
        self._base = new_hex_id()
        self._started = False
        self._finished = False
        self._blocks: dict[int, _Block] = {}
        self._output: dict[int, dict[str, Any]] = {}  # finished items, by output_index
        self._next_output = 0
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        if self._finished:
            return []
        kind = payload.get("type")
        if not isinstance(kind, str):
            return []
        if kind == "message_start":
            return self._on_start(payload)
        if kind == "error":
            return self._on_error(payload)
        events = self._start() if kind in _CONTENT_EVENTS else []
        if kind == "content_block_start":
            events.extend(self._on_block_start(payload))
        elif kind == "content_block_delta":
            events.extend(self._on_block_delta(payload))
        elif kind == "content_block_stop":
            events.extend(self._on_block_stop(payload.get("index")))
        elif kind == "message_delta":
            self._stop_reason = text_field(payload.get("delta"), "stop_reason") or self._stop_reason
            self._read_usage(payload.get("usage"))
        elif kind == "message_stop":
            events.extend(self._on_stop())
        return events

    # --- the response ---

    @property
    def response_id(self) -> str:
        return f"resp_{self._base}"

    def _response(self, status: str, *, final: bool = False) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": self._created_at,
            "model": self._model,
            "status": status,
            "output": [self._output[index] for index in sorted(self._output)] if final else [],
            "error": None,
            "incomplete_details": None,
            **self._echo,
        }
        if final:
            response["usage"] = self._usage_object()
        return response

    def _usage_object(self) -> dict[str, Any]:
        usage = self._usage
        cached = usage.get("cache_read_input_tokens", 0)
        written = usage.get("cache_creation_input_tokens", 0)
        prompt = usage.get("input_tokens", 0) + cached + written
        output = usage.get("output_tokens", 0)
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": usage.get("thinking_tokens", 0)},
            "total_tokens": prompt + output,
        }

    def _read_usage(self, usage: Any) -> None:
        """Claude's counts are cumulative: a later event's number replaces the earlier one."""
        if not isinstance(usage, Mapping):
            return
        for key in (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        ):
            if usage.get(key) is not None:
                self._usage[key] = count(usage.get(key))
        thinking = get(usage.get("output_tokens_details"), "thinking_tokens")
        if thinking is not None:
            self._usage["thinking_tokens"] = count(thinking)

    # --- handlers ---

    def _on_start(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        message = payload.get("message")
        message_id = get(message, "id")
        if not self._started and isinstance(message_id, str) and message_id:
            self._base = message_id.removeprefix("msg_")
        self._read_usage(get(message, "usage"))
        return self._start()

    def _start(self) -> list[dict[str, Any]]:
        if self._started:
            return []
        self._started = True
        return [
            {"type": "response.created", "response": self._response("in_progress")},
            {"type": "response.in_progress", "response": self._response("in_progress")},
        ]

    def _on_block_start(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        index = payload.get("index")
        block = payload.get("content_block")
        kind = get(block, "type")
        if not isinstance(index, int) or not isinstance(block, Mapping):
            return []
        if kind == "text":
            state = self._blocks[index] = _Block("text")
            events = self._announce(state)
            text = block.get("text")
            if isinstance(text, str) and text:
                events.extend(self._text_delta(state, text))
            return events
        if kind == "thinking":
            state = self._blocks[index] = _Block("reasoning")
            thinking = block.get("thinking")
            # Announced with its first text: a block of only a signature leaves no trace.
            return self._thinking_delta(state, thinking) if isinstance(thinking, str) and thinking else []
        if kind == "tool_use":
            name = str(block.get("name") or "")
            call_kind = "custom_tool_call" if name in self._custom else "function_call"
            state = self._blocks[index] = _Block(call_kind, call_id=str(block.get("id") or ""), name=name)
            events = self._announce(state)
            initial = block.get("input")
            if isinstance(initial, Mapping) and initial:  # a JSON answer's block, or an odd stream
                events.extend(self._arguments_delta(state, dumps(initial)))
            return events
        return []  # redacted_thinking (XLAT-2) and server-tool blocks we never asked for

    def _on_block_delta(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        index = payload.get("index")
        state = self._blocks.get(index) if isinstance(index, int) else None
        delta = payload.get("delta")
        kind = get(delta, "type")
        if state is None:
            return []
        if kind == "text_delta" and state.kind == "text":
            text = get(delta, "text")
            return self._text_delta(state, text) if isinstance(text, str) and text else []
        if kind == "thinking_delta" and state.kind == "reasoning":
            thinking = get(delta, "thinking")
            return self._thinking_delta(state, thinking) if isinstance(thinking, str) and thinking else []
        if kind == "input_json_delta" and state.kind in ("function_call", "custom_tool_call"):
            fragment = get(delta, "partial_json")
            return self._arguments_delta(state, fragment) if isinstance(fragment, str) and fragment else []
        return []  # signature_delta (XLAT-2), citations_delta

    def _on_block_stop(self, index: Any) -> list[dict[str, Any]]:
        state = self._blocks.pop(index, None) if isinstance(index, int) else None
        if state is None or state.output_index is None:
            return []
        text = "".join(state.parts)
        common = {"item_id": state.item_id, "output_index": state.output_index}
        events: list[dict[str, Any]]
        if state.kind == "text":
            part = {"type": "output_text", "text": text, "annotations": []}
            events = [
                {
                    "type": "response.output_text.done",
                    **common,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                },
                {"type": "response.content_part.done", **common, "content_index": 0, "part": part},
            ]
            item = _message_item(state.item_id, "completed", [part])
        elif state.kind == "reasoning":
            part = {"type": "summary_text", "text": text}
            events = [
                {"type": "response.reasoning_summary_text.done", **common, "summary_index": 0, "text": text},
                {"type": "response.reasoning_summary_part.done", **common, "summary_index": 0, "part": part},
            ]
            item = {"type": "reasoning", "id": state.item_id, "summary": [part]}
        elif state.kind == "function_call":
            events = [] if text else self._arguments_delta(state, "{}")  # no arguments is "{}"
            arguments = text or "{}"
            events.append({"type": "response.function_call_arguments.done", **common, "arguments": arguments})
            item = _call_item(state, "completed", arguments=arguments)
        else:
            raw_input = _custom_input(text)
            events = [
                {"type": "response.custom_tool_call_input.delta", **common, "delta": raw_input},
                {"type": "response.custom_tool_call_input.done", **common, "input": raw_input},
            ]
            item = _call_item(state, "completed", input=raw_input)
        events.append({"type": "response.output_item.done", "output_index": state.output_index, "item": item})
        self._output[state.output_index] = item
        return events

    def _on_stop(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for index in sorted(self._blocks):  # blocks a short stream never closed
            events.extend(self._on_block_stop(index))
        self._finished = True
        reason = _INCOMPLETE.get(self._stop_reason or "")
        if reason is None:
            events.append({"type": "response.completed", "response": self._response("completed", final=True)})
        else:
            response = self._response("incomplete", final=True)
            response["incomplete_details"] = {"reason": reason}
            events.append({"type": "response.incomplete", "response": response})
        return events

    def _on_error(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        events = self._start()
        self._finished = True
        error = payload.get("error")
        kind = get(error, "type")
        message = get(error, "message")
        response = self._response("failed", final=True)
        response["error"] = {
            "code": _ERROR_CODES.get(kind if isinstance(kind, str) else "", "upstream_error"),
            "message": message if isinstance(message, str) and message else "The upstream model failed.",
        }
        events.append({"type": "response.failed", "response": response})
        return events

    # --- items ---

    def _announce(self, state: _Block) -> list[dict[str, Any]]:
        """Give the block its output item and say so (``output_item.added`` and its first part)."""
        index = state.output_index = self._next_output
        self._next_output += 1
        prefix = {"text": "msg", "reasoning": "rs", "function_call": "fc", "custom_tool_call": "ctc"}[
            state.kind
        ]
        state.item_id = f"{prefix}_{self._base}_{index}"
        common = {"item_id": state.item_id, "output_index": index}
        if state.kind == "text":
            item = _message_item(state.item_id, "in_progress", [])
            part = {"type": "output_text", "text": "", "annotations": []}
            return [
                {"type": "response.output_item.added", "output_index": index, "item": item},
                {"type": "response.content_part.added", **common, "content_index": 0, "part": part},
            ]
        if state.kind == "reasoning":
            item = {"type": "reasoning", "id": state.item_id, "summary": []}
            part = {"type": "summary_text", "text": ""}
            return [
                {"type": "response.output_item.added", "output_index": index, "item": item},
                {"type": "response.reasoning_summary_part.added", **common, "summary_index": 0, "part": part},
            ]
        if state.kind == "function_call":
            item = _call_item(state, "in_progress", arguments="")
        else:
            item = _call_item(state, "in_progress", input="")
        return [{"type": "response.output_item.added", "output_index": index, "item": item}]

    def _text_delta(self, state: _Block, text: str) -> list[dict[str, Any]]:
        state.parts.append(text)
        common = {"item_id": state.item_id, "output_index": state.output_index}
        return [
            {
                "type": "response.output_text.delta",
                **common,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
        ]

    def _thinking_delta(self, state: _Block, text: str) -> list[dict[str, Any]]:
        events = self._announce(state) if state.output_index is None else []
        state.parts.append(text)
        common = {"item_id": state.item_id, "output_index": state.output_index}
        events.append(
            {"type": "response.reasoning_summary_text.delta", **common, "summary_index": 0, "delta": text}
        )
        return events

    def _arguments_delta(self, state: _Block, fragment: str) -> list[dict[str, Any]]:
        state.parts.append(fragment)
        if state.kind == "custom_tool_call":
            return []  # buffered: the raw input is inside a JSON string, sent whole at the stop
        common = {"item_id": state.item_id, "output_index": state.output_index}
        return [{"type": "response.function_call_arguments.delta", **common, "delta": fragment}]


_CONTENT_EVENTS: Final = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)


def _request_echo(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's tool settings, which a Responses ``response`` object repeats."""
    tools = request.get("tools")
    choice = request.get("tool_choice")
    parallel = request.get("parallel_tool_calls")
    return {
        "tools": [dict(tool) for tool in tools if isinstance(tool, Mapping)]
        if isinstance(tools, list)
        else [],
        "tool_choice": choice if isinstance(choice, str | Mapping) else "auto",
        "parallel_tool_calls": parallel if isinstance(parallel, bool) else True,
    }


def _message_item(item_id: str, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "id": item_id, "role": "assistant", "status": status, "content": content}


def _call_item(state: _Block, status: str, **payload: str) -> dict[str, Any]:
    item = {"type": state.kind, "id": state.item_id, "call_id": state.call_id, "name": state.name, **payload}
    if state.kind == "function_call":  # a custom_tool_call item has no status in the Responses API
        item["status"] = status
    return item


def _custom_input(arguments: str) -> str:
    """The raw input of a custom tool call from the ``{"input": …}`` Claude was asked for."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments
    if isinstance(value, dict):
        raw = value.get("input")
        if isinstance(raw, str):
            return raw
        if len(value) == 1:
            (only,) = value.values()
            return only if isinstance(only, str) else dumps(only)
    return arguments


def answer_events(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A JSON Messages answer as the stream events that would have carried it."""
    message = {key: value for key, value in answer.items() if key not in ("content", "stop_reason")}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "content": []}}]
    content = answer.get("content")
    for index, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        start = dict(block)
        delta: dict[str, Any] | None = None
        if kind == "text":
            start["text"] = ""
            delta = {"type": "text_delta", "text": block.get("text") or ""}
        elif kind == "thinking":
            start["thinking"] = ""
            delta = {"type": "thinking_delta", "thinking": block.get("thinking") or ""}
        elif kind == "tool_use":
            start["input"] = {}
            delta = {"type": "input_json_delta", "partial_json": dumps(block.get("input") or {})}
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if delta is not None:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": answer.get("stop_reason")},
            "usage": answer.get("usage"),
        }
    )
    events.append({"type": "message_stop"})
    return events
