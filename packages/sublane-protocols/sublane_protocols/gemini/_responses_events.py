"""Writing the hub's Responses events in OpenAI's order, for an upstream whose stream is not Responses.

:class:`ResponsesEventWriter` keeps the state OpenAI's stream implies: ``response.created`` and
``response.in_progress`` first, then one output item at a time (``output_item.added``, its parts,
deltas, ``…done`` events, ``output_item.done``) with increasing ``output_index``, and exactly one
terminal event whose ``response`` carries the whole ``output`` and the usage. Text and reasoning
items stay open while their deltas come and are closed when another kind of output starts or the
turn ends; tool calls arrive whole and are written as one complete item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sublane_core import new_hex_id

ItemKind = Literal["message", "reasoning"]


def new_id(prefix: str) -> str:
    return f"{prefix}_{new_hex_id()}"


@dataclass(slots=True)
class _OpenItem:
    kind: ItemKind
    item_id: str
    output_index: int
    text: list[str] = field(default_factory=list)


class ResponsesEventWriter:
    """The Responses events of one turn, written as the upstream's output arrives."""

    __slots__ = (
        "_created_at",
        "_finished",
        "_model",
        "_open",
        "_output",
        "_request",
        "_response_id",
        "_sequence",
        "_started",
    )

    def __init__(self, *, model: str, request: Mapping[str, Any], created_at: int) -> None:
        self._model = model
        self._request = request
        self._created_at = created_at
        self._response_id = new_id("resp")
        self._sequence = 0
        self._started = False
        self._finished = False
        self._open: _OpenItem | None = None
        self._output: list[dict[str, Any]] = []

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def output(self) -> list[dict[str, Any]]:
        """The completed output items so far."""
        return list(self._output)

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, **fields, "sequence_number": self._sequence}
        self._sequence += 1
        return event

    def response(self, status: str, **fields: Any) -> dict[str, Any]:
        """The ``response`` object in its current state."""
        request = self._request
        tools = request.get("tools")
        choice = request.get("tool_choice")
        return {
            "id": self._response_id,
            "object": "response",
            "created_at": self._created_at,
            "model": self._model,
            "status": status,
            "output": list(self._output) if status != "in_progress" else [],
            "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
            "tool_choice": choice if isinstance(choice, str | dict) else "auto",
            "tools": list(tools) if isinstance(tools, list) else [],
            **fields,
        }

    def start(self, response_id: str | None = None) -> list[dict[str, Any]]:
        """``response.created`` and ``response.in_progress`` (once); ``response_id``: the upstream's."""
        if self._started:
            return []
        self._started = True
        if response_id:
            self._response_id = "resp_" + response_id
        response = self.response("in_progress")
        return [
            self._event("response.created", response=response),
            self._event("response.in_progress", response=response),
        ]

    # -- text and reasoning --------------------------------------------------------------------------

    def _ensure_open(self, kind: ItemKind) -> list[dict[str, Any]]:
        if self._open is not None and self._open.kind == kind:
            return []
        events = self.close_open()
        index = len(self._output)
        if kind == "message":
            item = _OpenItem(kind, new_id("msg"), index)
            added = {
                "type": "message",
                "id": item.item_id,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            events.append(self._event("response.output_item.added", output_index=index, item=added))
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                self._event(
                    "response.content_part.added",
                    item_id=item.item_id,
                    output_index=index,
                    content_index=0,
                    part=part,
                )
            )
        else:
            item = _OpenItem(kind, new_id("rs"), index)
            added = {"type": "reasoning", "id": item.item_id, "summary": []}
            events.append(self._event("response.output_item.added", output_index=index, item=added))
            events.append(
                self._event(
                    "response.reasoning_summary_part.added",
                    item_id=item.item_id,
                    output_index=index,
                    summary_index=0,
                    part={"type": "summary_text", "text": ""},
                )
            )
        self._open = item
        return events

    def text(self, delta: str) -> list[dict[str, Any]]:
        events = self._ensure_open("message")
        item = self._open
        assert item is not None
        item.text.append(delta)
        events.append(
            self._event(
                "response.output_text.delta",
                item_id=item.item_id,
                output_index=item.output_index,
                content_index=0,
                delta=delta,
                logprobs=[],
            )
        )
        return events

    def reasoning(self, delta: str) -> list[dict[str, Any]]:
        events = self._ensure_open("reasoning")
        item = self._open
        assert item is not None
        item.text.append(delta)
        events.append(
            self._event(
                "response.reasoning_summary_text.delta",
                item_id=item.item_id,
                output_index=item.output_index,
                summary_index=0,
                delta=delta,
            )
        )
        return events

    def close_open(self, status: str = "completed") -> list[dict[str, Any]]:
        """The closing events of the open text or reasoning item (none when none is open)."""
        item = self._open
        if item is None:
            return []
        self._open = None
        text = "".join(item.text)
        where = {"item_id": item.item_id, "output_index": item.output_index}
        if item.kind == "message":
            part = {"type": "output_text", "text": text, "annotations": []}
            done: dict[str, Any] = {
                "type": "message",
                "id": item.item_id,
                "role": "assistant",
                "status": status,
                "content": [part],
            }
            events = [
                self._event("response.output_text.done", **where, content_index=0, text=text, logprobs=[]),
                self._event("response.content_part.done", **where, content_index=0, part=part),
            ]
        else:
            summary = {"type": "summary_text", "text": text}
            done = {"type": "reasoning", "id": item.item_id, "summary": [summary]}
            events = [
                self._event("response.reasoning_summary_text.done", **where, summary_index=0, text=text),
                self._event("response.reasoning_summary_part.done", **where, summary_index=0, part=summary),
            ]
        self._output.append(done)
        events.append(self._event("response.output_item.done", output_index=item.output_index, item=done))
        return events

    # -- tool calls ------------------------------------------------------------------------------------

    def function_call(self, call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
        """A whole function call: its item, its arguments as one delta, its done events."""
        events = self.close_open()
        index = len(self._output)
        item_id = new_id("fc")
        added = {
            "type": "function_call",
            "id": item_id,
            "call_id": call_id,
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        done = dict(added, arguments=arguments, status="completed")
        where = {"item_id": item_id, "output_index": index}
        events += [
            self._event("response.output_item.added", output_index=index, item=added),
            self._event("response.function_call_arguments.delta", **where, delta=arguments),
            self._event("response.function_call_arguments.done", **where, name=name, arguments=arguments),
        ]
        self._output.append(done)
        events.append(self._event("response.output_item.done", output_index=index, item=done))
        return events

    def custom_tool_call(self, call_id: str, name: str, text: str) -> list[dict[str, Any]]:
        """A whole call of a custom (freeform) tool."""
        events = self.close_open()
        index = len(self._output)
        item_id = new_id("ctc")
        added = {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": name, "input": ""}
        done = dict(added, input=text)
        where = {"item_id": item_id, "output_index": index}
        events += [
            self._event("response.output_item.added", output_index=index, item=added),
            self._event("response.custom_tool_call_input.delta", **where, delta=text),
            self._event("response.custom_tool_call_input.done", **where, input=text),
        ]
        self._output.append(done)
        events.append(self._event("response.output_item.done", output_index=index, item=done))
        return events

    # -- the end ---------------------------------------------------------------------------------------

    def finish(
        self,
        status: Literal["completed", "incomplete", "failed"],
        *,
        usage: Mapping[str, Any] | None = None,
        reason: str | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """The terminal event (once): ``reason`` is the incomplete reason, ``error`` a failure's."""
        if self._finished:
            return []
        events = self.start()
        events += self.close_open("incomplete" if status == "incomplete" else "completed")
        self._finished = True
        fields: dict[str, Any] = {}
        if usage is not None:
            fields["usage"] = dict(usage)
        if status == "incomplete":
            fields["incomplete_details"] = {"reason": reason or "max_output_tokens"}
        if status == "failed":
            fields["error"] = dict(error or {"code": "upstream_error", "message": "The upstream failed."})
        events.append(self._event(f"response.{status}", response=self.response(status, **fields)))
        return events


def arguments_json(args: Any) -> str:
    """A Gemini ``args`` object as the JSON text of Responses ``arguments``."""
    return json.dumps(args if isinstance(args, Mapping) else {}, ensure_ascii=False, separators=(",", ":"))
