"""Hub (Responses) events as a Gemini client's stream: ``GenerateContentResponse`` chunks.

Every chunk is ``{"candidates": [{"content": {"role": "model", "parts": […]}, "index": 0}],
"modelVersion", "responseId"}``:

- a text delta → a chunk with one text part;
- a reasoning delta (summary or raw reasoning text) → ``{"text", "thought": true}``, only when the
  client asked for thoughts (``thinkingConfig.includeThoughts``), as Gemini only then sends them;
- a function (or custom tool) call → ONE chunk with a ``functionCall {name, args, id}`` part once
  its arguments are complete (Gemini never streams arguments); ``id`` is the hub's ``call_id`` so
  the client's ``functionResponse`` names it;
- the terminal event → a chunk with empty ``parts``, ``finishReason`` (STOP; MAX_TOKENS for
  ``max_output_tokens``; SAFETY for ``content_filter``) and the ``usageMetadata``;
- ``response.failed``, an ``error`` event, or a stream that broke off (``trailer``) → an element
  with Google's error envelope (status 502), which the ``google-genai`` SDK raises as an API error.

Framing is :class:`~sublane_protocols._framing.ReframedStream`'s: SSE ``data:`` frames, or one JSON
array streamed element by element (``json_array``) that ``trailer`` closes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sublane_core import WireProtocol, new_hex_id
from sublane_protocols._errors import render_error
from sublane_protocols._framing import ReframedStream

_FINISH: Final = {"max_output_tokens": "MAX_TOKENS", "content_filter": "SAFETY"}
_BROKEN_OFF: Final = "The upstream stream ended before the response was complete."


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def gemini_usage(usage: Any) -> dict[str, int]:
    """Responses ``usage`` as Gemini ``usageMetadata`` (thoughts apart from the candidates)."""
    prompt = _count(_field(usage, "input_tokens"))
    output = _count(_field(usage, "output_tokens"))
    reasoning = min(_count(_field(_field(usage, "output_tokens_details"), "reasoning_tokens")), output)
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output - reasoning,
        "thoughtsTokenCount": reasoning,
        "cachedContentTokenCount": _count(_field(_field(usage, "input_tokens_details"), "cached_tokens")),
        "totalTokenCount": prompt + output,
    }


def finish_reason(response: Mapping[str, Any]) -> str:
    if response.get("status") == "incomplete":
        return _FINISH.get(str(_field(response.get("incomplete_details"), "reason")), "MAX_TOKENS")
    return "STOP"


def call_args(arguments: Any) -> dict[str, Any]:
    """Responses ``arguments`` (JSON text) as Gemini ``args`` (an object; ``{}`` when not one)."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def call_part(item: Mapping[str, Any]) -> dict[str, Any]:
    """The ``functionCall`` part of a ``function_call`` or ``custom_tool_call`` item."""
    if item.get("type") == "custom_tool_call":
        text = item.get("input")
        args: dict[str, Any] = {"input": text if isinstance(text, str) else ""}
    else:
        args = call_args(item.get("arguments"))
    call = {"name": str(item.get("name") or ""), "args": args}
    call_id = item.get("call_id")
    if isinstance(call_id, str) and call_id:
        call["id"] = call_id
    return {"functionCall": call}


def error_element(code: str, message: str) -> dict[str, Any]:
    return render_error(WireProtocol.GEMINI, 502, code, message).body


@dataclass(slots=True)
class _Call:
    item: dict[str, Any]
    arguments: list[str]
    sent: bool = False


class GeminiFrames:
    """Responses events in, Gemini stream frames (bytes) out, for one call."""

    __slots__ = (
        "_calls",
        "_finished",
        "_framing",
        "_handlers",
        "_model",
        "_response_id",
        "_seen",
        "_thoughts",
    )

    def __init__(self, *, model: str, include_thoughts: bool, json_array: bool = False) -> None:
        self._model = model
        self._thoughts = include_thoughts
        self._framing = ReframedStream(lambda payload: payload, self._broken_off, json_array=json_array)
        self._response_id = new_hex_id()
        self._finished = False
        self._calls: dict[Any, _Call] = {}
        self._seen: set[Any] = set()  # items whose deltas were sent
        self._handlers: dict[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]] = {
            "response.created": self._on_created,
            "response.output_text.delta": self._on_text,
            "response.reasoning_summary_text.delta": self._on_reasoning,
            "response.reasoning_text.delta": self._on_reasoning,
            "response.output_item.added": self._on_item_added,
            "response.function_call_arguments.delta": self._on_arguments,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.output_item.done": self._on_item_done,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }

    @staticmethod
    def _broken_off(code: str) -> Mapping[str, Any]:
        return error_element(code, _BROKEN_OFF)

    @property
    def finished(self) -> bool:
        return self._finished

    def chunk(self, parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, **candidate, "index": 0}],
            "modelVersion": self._model,
            "responseId": self._response_id,
        }

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        if self._finished:
            return b""
        handler = self._handlers.get(str(payload.get("type")))
        if handler is None:
            return b""
        return b"".join(self._framing.feed(element) for element in handler(payload))

    def trailer(self, error_code: str | None) -> bytes:
        if self._finished:
            return self._framing.trailer(None)
        self._finished = True
        return self._framing.trailer(error_code or "upstream_stream_error")

    # -- handlers --------------------------------------------------------------------------------------

    def _on_created(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        response_id = _field(event.get("response"), "id")
        if isinstance(response_id, str) and response_id:
            self._response_id = response_id
        return []

    def _on_text(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._seen.add(event.get("item_id"))
        delta = event.get("delta")
        return [self.chunk([{"text": delta}])] if isinstance(delta, str) and delta else []

    def _on_reasoning(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._seen.add(event.get("item_id"))
        delta = event.get("delta")
        if not self._thoughts or not isinstance(delta, str) or not delta:
            return []
        return [self.chunk([{"text": delta, "thought": True}])]

    def _on_item_added(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        item = event.get("item")
        if isinstance(item, Mapping) and item.get("type") in ("function_call", "custom_tool_call"):
            call = _Call(dict(item), [])
            self._calls[("item", item.get("id"))] = call
            self._calls[("output", event.get("output_index"))] = call
        return []

    def _call(self, event: Mapping[str, Any]) -> _Call | None:
        item_id = event.get("item_id")
        call = self._calls.get(("item", item_id)) if item_id is not None else None
        return call or self._calls.get(("output", event.get("output_index")))

    def _on_arguments(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = self._call(event)
        if call is not None and isinstance(event.get("delta"), str):
            call.arguments.append(event["delta"])
        return []

    def _send_call(self, call: _Call) -> list[dict[str, Any]]:
        if call.sent:
            return []
        call.sent = True
        return [self.chunk([call_part(call.item)])]

    def _on_arguments_done(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = self._call(event)
        if call is None:
            return []
        arguments = event.get("arguments")
        call.item["arguments"] = arguments if isinstance(arguments, str) else "".join(call.arguments)
        return self._send_call(call)

    def _on_item_done(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        item = event.get("item")
        if not isinstance(item, Mapping):
            return []
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            call = self._calls.get(("item", item.get("id"))) or self._calls.get(
                ("output", event.get("output_index"))
            )
            if call is None:
                call = _Call(dict(item), [])
            else:
                call.item.update(item)  # the done item is authoritative (PROTOCOLS §1.4)
            return self._send_call(call)
        if item.get("id") in self._seen:
            return []
        if kind == "message":
            text = "".join(
                part.get("text", "")
                for part in item.get("content") or []
                if isinstance(part, Mapping)
                and part.get("type") == "output_text"
                and isinstance(part.get("text"), str)
            )
            return [self.chunk([{"text": text}])] if text else []
        if kind == "reasoning" and self._thoughts:
            text = "\n\n".join(
                part["text"]
                for part in item.get("summary") or []
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
            return [self.chunk([{"text": text, "thought": True}])] if text else []
        return []

    def _on_terminal(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._finished = True
        response = event.get("response")
        response = dict(response) if isinstance(response, Mapping) else {}
        if event.get("type") == "response.incomplete":
            response["status"] = "incomplete"
        chunk = self.chunk([], finishReason=finish_reason(response))
        chunk["usageMetadata"] = gemini_usage(response.get("usage"))
        return [chunk]

    def _on_failed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._finished = True
        error = _field(event.get("response"), "error")
        return [_error_of(error)]

    def _on_error(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        self._finished = True
        nested = event.get("error")
        return [_error_of(nested if isinstance(nested, Mapping) else event)]


def _error_of(source: Any) -> dict[str, Any]:
    code = _field(source, "code")
    message = _field(source, "message")
    return error_element(
        code if isinstance(code, str) and code else "upstream_error",
        message if isinstance(message, str) and message else "The upstream model failed to respond.",
    )
