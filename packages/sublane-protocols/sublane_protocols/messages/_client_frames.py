"""Hub (Responses) events and answers as a Messages client reads them.

| Responses | Messages |
| --- | --- |
| `response.created` | `message_start` (usage: the input tokens as far as known, else 0) |
| an `output_text` / `refusal` part and its deltas | a `text` block, `text_delta`s |
| a `reasoning` item (summary parts, or raw reasoning text) | one `thinking` block, `thinking_delta`s |
| | (parts joined by a blank line) |
| a `function_call` / `custom_tool_call` item | a `tool_use` block (`id` = `call_id`), `input_json_delta`s |
| | with the argument fragments (a custom tool's input as `{"input": "…"}`) |
| `response.completed` / `.incomplete` | `message_delta` (stop reason, usage) and `message_stop` |
| `response.failed`, `error` | an `error` event |

Blocks are numbered 0, 1, 2… in the order they open, and only one is open at a time, as Anthropic
streams them. A block opens with its first text, so an empty part or summary makes no block (Claude
refuses empty text blocks when a client replays them). A thinking block starts with
`signature: ""` (the field is required by the SDKs' `ThinkingBlock`) and never gets a
`signature_delta`: no signature is made up, and one from another provider never crosses (XLAT-2).

Stop reason: `tool_use` when a tool was called, `max_tokens` for an incomplete `max_output_tokens`,
`refusal` for `content_filter`, else `end_turn`. Usage: `input_tokens` excludes cached and
cache-written tokens (`input - cached - cache_write`), `cache_read_input_tokens` = cached,
`cache_creation_input_tokens` = cache_write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sublane_core import new_hex_id
from sublane_protocols._framing import named_sse
from sublane_protocols.messages._shape import count
from sublane_protocols.messages._shape import field as get

_ERROR_TYPES: Final = {
    "rate_limit_exceeded": "rate_limit_error",
    "usage_limit_reached": "rate_limit_error",
    "insufficient_quota": "rate_limit_error",
    "usage_not_included": "permission_error",
    "server_is_overloaded": "overloaded_error",
    "slow_down": "overloaded_error",
    "context_length_exceeded": "invalid_request_error",
    "invalid_prompt": "invalid_request_error",
    "invalid_request": "invalid_request_error",
}
_CUT_SHORT: Final = "The upstream stream ended before the response was complete."
_TOOL_ITEMS: Final = ("function_call", "custom_tool_call")  # a tuple: odd (unhashable) types compare too


def message_id(response: Any) -> str:
    """``msg_…`` after the response's own id, so the two can be matched in logs."""
    response_id = get(response, "id")
    if isinstance(response_id, str) and response_id.startswith("resp_") and len(response_id) > 5:
        return "msg_" + response_id.removeprefix("resp_")
    return "msg_" + new_hex_id()


def anthropic_usage(usage: Any) -> dict[str, int]:
    """Responses usage as Anthropic counts it: input without the cached and cache-written tokens."""
    details = get(usage, "input_tokens_details")
    cached = count(get(details, "cached_tokens"))
    written = count(get(details, "cache_write_tokens"))
    return {
        "input_tokens": max(count(get(usage, "input_tokens")) - cached - written, 0),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
        "output_tokens": count(get(usage, "output_tokens")),
    }


def stop_reason(response: Mapping[str, Any], called_tools: bool) -> str:
    if response.get("status") == "incomplete":
        reason = get(response.get("incomplete_details"), "reason")
        return "refusal" if reason == "content_filter" else "max_tokens"
    return "tool_use" if called_tools else "end_turn"


def error_object(code: Any, message: Any) -> dict[str, Any]:
    """Anthropic's ``error`` object for a hub error code (SubLane's code kept in ``code``)."""
    code = code if isinstance(code, str) and code else "upstream_error"
    text = message if isinstance(message, str) and message else "The upstream model failed to respond."
    return {"type": _ERROR_TYPES.get(code, "api_error"), "message": text, "code": code}


def _custom_fragment(fragment: str) -> str:
    """A fragment of a raw custom-tool input, as the inside of the JSON string ``{"input": "…"}``."""
    return json.dumps(fragment, ensure_ascii=False)[1:-1]


@dataclass(slots=True)
class _Block:
    index: int
    kind: str  # "text" | "thinking" | "tool_use"
    custom: bool = False
    sent: str = ""  # the text (or JSON) streamed so far
    part: Any = None  # thinking: the summary part being streamed
    json_open: bool = False  # custom tool: '{"input":"' has been sent


class MessagesFrames:
    """Responses events in, Anthropic SSE frames out, for one call."""

    def __init__(self, *, model: str) -> None:
        self._model = model
        self._started = False
        self._finished = False
        self._next_index = 0
        self._open: tuple[Any, ...] | None = None
        self._blocks: dict[tuple[Any, ...], _Block] = {}
        self._called_tools = False
        self._handlers: dict[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]] = {
            "response.created": self._on_created,
            "response.output_item.added": self._on_item_added,
            "response.output_text.delta": self._on_text,
            "response.refusal.delta": self._on_text,
            "response.content_part.done": self._on_part_done,
            "response.reasoning_summary_text.delta": self._on_thinking,
            "response.reasoning_text.delta": self._on_thinking,
            "response.function_call_arguments.delta": self._on_arguments,
            "response.custom_tool_call_input.delta": self._on_arguments,
            "response.output_item.done": self._on_item_done,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        return b"".join(named_sse(frame) for frame in self.events(payload))

    def events(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The Anthropic events (not yet framed) for one hub event."""
        if self._finished:
            return []
        handler = self._handlers.get(str(payload.get("type")))
        return handler(payload) if handler is not None else []

    def trailer(self, error_code: str | None) -> bytes:
        if self._finished:
            return b""
        self._finished = True
        return named_sse(
            {"type": "error", "error": error_object(error_code or "upstream_stream_error", _CUT_SHORT)}
        )

    # --- the message ---

    def _message_start(self, response: Any) -> list[dict[str, Any]]:
        if self._started:
            return []
        self._started = True
        usage = anthropic_usage(get(response, "usage"))
        usage["output_tokens"] = 0
        message: dict[str, Any] = {
            "id": message_id(response),
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        return [{"type": "message_start", "message": message}]

    def _on_created(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self._message_start(event.get("response"))

    # --- blocks ---

    def _block(
        self, key: tuple[Any, ...], start: dict[str, Any], *, custom: bool = False
    ) -> tuple[_Block, list[dict[str, Any]]]:
        """The block of ``key``, opened (closing the open one) when it is not the open block."""
        events = self._message_start(None)
        if self._open == key:
            return self._blocks[key], events
        events.extend(self._close())
        block = _Block(self._next_index, str(start["type"]), custom=custom)
        self._next_index += 1
        self._blocks[key] = block
        self._open = key
        events.append({"type": "content_block_start", "index": block.index, "content_block": start})
        return block, events

    def _close(self) -> list[dict[str, Any]]:
        key, self._open = self._open, None
        if key is None:
            return []
        block = self._blocks[key]
        events: list[dict[str, Any]] = []
        if block.custom and block.json_open:
            events.append(_delta(block.index, {"type": "input_json_delta", "partial_json": '"}'}))
        events.append({"type": "content_block_stop", "index": block.index})
        return events

    def _text_into(self, key: tuple[Any, ...], text: str) -> list[dict[str, Any]]:
        """Text for the block of ``key``, opened with its first text (Claude refuses empty text
        blocks when a client replays them)."""
        if not text:
            return []
        block, events = self._block(key, {"type": "text", "text": ""})
        block.sent += text
        events.append(_delta(block.index, {"type": "text_delta", "text": text}))
        return events

    def _thinking_into(self, item_id: Any, text: str, part: Any = None) -> list[dict[str, Any]]:
        """Reasoning text for the item's one thinking block; a new summary part starts a paragraph."""
        if not text:
            return []
        block, events = self._block(
            ("thinking", item_id), {"type": "thinking", "thinking": "", "signature": ""}
        )
        if part is not None and part != block.part:
            if block.part is not None and block.sent:
                text = "\n\n" + text
            block.part = part
        block.sent += text
        events.append(_delta(block.index, {"type": "thinking_delta", "thinking": text}))
        return events

    def _tool_start(self, item: Mapping[str, Any]) -> tuple[_Block, list[dict[str, Any]]]:
        self._called_tools = True
        start = {
            "type": "tool_use",
            "id": str(item.get("call_id") or item.get("id") or ""),
            "name": str(item.get("name") or ""),
            "input": {},
        }
        return self._block(
            ("tool", _ref(item.get("id"))), start, custom=item.get("type") == "custom_tool_call"
        )

    def _arguments_into(self, block: _Block, fragment: str) -> list[dict[str, Any]]:
        if not fragment and not (block.custom and not block.json_open):
            return []
        if block.custom:
            prefix = "" if block.json_open else '{"input":"'
            block.json_open = True
            fragment = prefix + _custom_fragment(fragment)
        block.sent += fragment
        return [_delta(block.index, {"type": "input_json_delta", "partial_json": fragment})]

    # --- handlers ---

    def _on_item_added(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        item = event.get("item")
        if not isinstance(item, Mapping) or item.get("type") not in _TOOL_ITEMS:
            return []
        _, events = self._tool_start(item)
        return events

    def _on_text(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        delta = event.get("delta")
        if not isinstance(delta, str):
            return []
        return self._text_into(("text", _ref(event.get("item_id")), _ref(event.get("content_index"))), delta)

    def _on_part_done(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Close the text block, with whatever of the part's text the deltas did not carry."""
        key = ("text", _ref(event.get("item_id")), _ref(event.get("content_index")))
        part = event.get("part")
        text = _part_text(part)
        block = self._blocks.get(key)
        events: list[dict[str, Any]] = []
        sent = block.sent if block is not None else ""
        if text is not None and text.startswith(sent):
            events = self._text_into(key, text[len(sent) :])
        if self._open == key:
            events.extend(self._close())
        return events

    def _on_thinking(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        delta = event.get("delta")
        if not isinstance(delta, str):
            return []
        part = (
            _ref(event.get("summary_index"))
            if "summary_index" in event
            else ("content", _ref(event.get("content_index")))
        )
        return self._thinking_into(_ref(event.get("item_id")), delta, part)

    def _on_arguments(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        block = self._blocks.get(("tool", _ref(event.get("item_id"))))
        delta = event.get("delta")
        if block is None or not isinstance(delta, str) or not delta:
            return []
        return self._arguments_into(block, delta)

    def _on_item_done(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Close the item's block; emit what its deltas did not carry (done items are authoritative)."""
        item = event.get("item")
        if not isinstance(item, Mapping):
            return []
        kind = item.get("type")
        item_id = _ref(item.get("id"))
        if kind in _TOOL_ITEMS:
            return self._tool_done(item)
        events: list[dict[str, Any]] = []
        if kind == "reasoning":
            key: tuple[Any, ...] = ("thinking", item_id)
            if key not in self._blocks:
                summary = _summary_text(item)
                if summary:
                    events.extend(self._thinking_into(item_id, summary))
        elif kind == "message":
            for index, part in enumerate(_listed(item.get("content"))):
                key = ("text", item_id, index)
                text = _part_text(part)
                if key not in self._blocks and text:
                    events.extend(self._text_into(key, text))
        if self._open is not None and self._open[1] == item_id:
            events.extend(self._close())
        return events

    def _tool_done(self, item: Mapping[str, Any]) -> list[dict[str, Any]]:
        key = ("tool", _ref(item.get("id")))
        block = self._blocks.get(key)
        events: list[dict[str, Any]] = []
        if block is None:  # a stream that skipped output_item.added
            block, events = self._tool_start(item)
        full = item.get("input") if block.custom else item.get("arguments")
        if isinstance(full, str) and not block.sent:
            events.extend(self._arguments_into(block, full))
        if self._open == key:
            events.extend(self._close())
        return events

    def _on_terminal(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        response = event.get("response")
        response = response if isinstance(response, Mapping) else {}
        if event.get("type") == "response.incomplete":
            response = {**response, "status": "incomplete"}
        output = response.get("output")
        called = self._called_tools or any(
            get(item, "type") in _TOOL_ITEMS for item in (output if isinstance(output, list) else [])
        )
        events = self._message_start(response)
        events.extend(self._close())
        self._finished = True
        usage = anthropic_usage(response.get("usage"))
        delta = {"stop_reason": stop_reason(response, called), "stop_sequence": None}
        events.append({"type": "message_delta", "delta": delta, "usage": usage})
        events.append({"type": "message_stop"})
        return events

    def _on_failed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        error = get(event.get("response"), "error")
        self._finished = True
        return [{"type": "error", "error": error_object(get(error, "code"), get(error, "message"))}]

    def _on_error(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        nested = event.get("error")
        source = nested if isinstance(nested, Mapping) else event
        self._finished = True
        return [{"type": "error", "error": error_object(get(source, "code"), get(source, "message"))}]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _summary_text(item: Mapping[str, Any]) -> str:
    """A reasoning item's summary parts, one paragraph each."""
    texts = [get(part, "text") for part in _listed(item.get("summary"))]
    return "\n\n".join(text for text in texts if isinstance(text, str) and text)


def _part_text(part: Any) -> str | None:
    """The text of an ``output_text`` (or ``refusal``) part."""
    text = get(part, "text") if get(part, "type") == "output_text" else get(part, "refusal")
    return text if isinstance(text, str) else None


def _ref(value: Any) -> str | int | None:
    """An item id or part index as a key (an odd, unhashable value still names one block)."""
    return value if value is None or isinstance(value, str | int) else repr(value)


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


# --- the JSON answer --------------------------------------------------------------------------------


def messages_answer(response: Mapping[str, Any], *, model: str) -> dict[str, Any]:
    """The Messages JSON answer for a completed or incomplete Responses ``response``.

    Raises:
        ValueError: the response failed (a failed turn has no message; report its error instead).
    """
    status = response.get("status")
    if status not in ("completed", "incomplete"):
        raise ValueError(f"expected a completed or incomplete response, got status {status!r}")
    content: list[dict[str, Any]] = []
    called = False
    for item in _listed(response.get("output")):
        kind = get(item, "type")
        if kind == "reasoning":
            summary = _summary_text(item)
            if summary:
                content.append({"type": "thinking", "thinking": summary, "signature": ""})
        elif kind == "message":
            for part in _listed(item.get("content")):
                text = _part_text(part)
                if text:
                    content.append({"type": "text", "text": text})
        elif kind in _TOOL_ITEMS:
            called = True
            content.append(_tool_use_block(item))
    return {
        "id": message_id(response),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(response, called),
        "stop_sequence": None,
        "usage": anthropic_usage(response.get("usage")),
    }


def _tool_use_block(item: Mapping[str, Any]) -> dict[str, Any]:
    """A ``tool_use`` block; arguments that are not a JSON object travel as ``{"input": "<text>"}``
    (a custom tool's input always does)."""
    raw = item.get("input") if item.get("type") == "custom_tool_call" else item.get("arguments")
    text = raw if isinstance(raw, str) else ""
    arguments: Any = {}
    if item.get("type") == "custom_tool_call":
        arguments = {"input": text}
    elif text.strip():
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"input": text}
    return {
        "type": "tool_use",
        "id": str(item.get("call_id") or item.get("id") or ""),
        "name": str(item.get("name") or ""),
        "input": arguments,
    }
