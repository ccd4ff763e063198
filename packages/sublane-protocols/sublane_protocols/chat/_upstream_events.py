"""Chat Completions stream chunks (and JSON answers) as the hub's Responses events.

- ``delta.content`` (and ``delta.refusal``) → one message item, a delta per chunk;
- ``delta.reasoning_content`` / ``delta.reasoning`` (the field vLLM, DeepSeek, llama.cpp and
  Ollama stream a reasoning model's thoughts in) → a reasoning item; a new item starts whenever
  the kind of output changes;
- ``delta.tool_calls`` arrive in pieces keyed by ``index`` (the first piece with ``id`` and
  ``function.name``, then ``function.arguments`` fragments): they are put together per index and
  written as whole ``function_call`` items, in index order, when the choice finishes — a call is
  only usable whole, and some servers interleave the pieces of parallel calls. A call of a tool
  the hub body declared ``custom`` comes back as a ``custom_tool_call`` (its ``input`` argument);
- ``finish_reason``: ``stop``, ``tool_calls``, ``function_call`` → ``response.completed``;
  ``length`` → ``response.incomplete`` ``max_output_tokens``; ``content_filter`` →
  ``response.incomplete`` ``content_filter``; anything else → ``response.completed``;
- an ``error`` object in the stream (vLLM and others send one for a failure after the headers) →
  ``response.failed``.

Usage: ``input_tokens`` = ``prompt_tokens``, ``cached_tokens`` =
``prompt_tokens_details.cached_tokens``, ``output_tokens`` = ``completion_tokens``,
``reasoning_tokens`` = ``completion_tokens_details.reasoning_tokens``.

With ``stream_options.include_usage`` (always asked for) the usage comes in one more chunk *after*
the ``finish_reason`` chunk, with an empty ``choices`` list; ``[DONE]`` ends the stream and is no
JSON, so no translator ever sees it. So the terminal event waits for the chunk after the finish
(any chunk: the usage one, or whatever the server sends instead), or is written straight away when
the finish chunk itself carries ``usage`` (llama.cpp's), or by :meth:`ChatEventsToResponses.at_end`
when the stream ended without either (a server that ignores ``stream_options``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from sublane_core import new_hex_id
from sublane_protocols._hub import custom_tool_names
from sublane_protocols.gemini._responses_events import ResponsesEventWriter

_INCOMPLETE: Final = {"length": "max_output_tokens", "content_filter": "content_filter"}
_REASONING_FIELDS: Final = ("reasoning_content", "reasoning")
Status = Literal["completed", "incomplete", "failed"]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def hub_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions ``usage`` as Responses ``usage``."""
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    prompt_details = usage.get("prompt_tokens_details")
    completion_details = usage.get("completion_tokens_details")
    cached = _count(prompt_details.get("cached_tokens")) if isinstance(prompt_details, Mapping) else 0
    reasoning = (
        _count(completion_details.get("reasoning_tokens")) if isinstance(completion_details, Mapping) else 0
    )
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": _count(usage.get("total_tokens")) or prompt + completion,
    }


def _error(source: Mapping[str, Any]) -> dict[str, Any]:
    message = source.get("message")
    text = message if isinstance(message, str) and message else "The upstream failed."
    code = source.get("code")
    kind = source.get("type")
    limited = code == "rate_limit_exceeded" or kind in ("rate_limit_error", "rate_limit_exceeded")
    return {"code": "rate_limit_exceeded" if limited else "server_error", "message": text}


@dataclass(slots=True)
class _Call:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatEventsToResponses:
    """``chat.completion.chunk`` objects in, hub events out, for one call."""

    __slots__ = ("_calls", "_custom", "_pending", "_usage", "_writer")

    def __init__(self, request: Mapping[str, Any], *, model: str, created_at: int | None = None) -> None:
        when = int(time.time()) if created_at is None else created_at
        self._writer = ResponsesEventWriter(model=model, request=request, created_at=when)
        self._custom = custom_tool_names(request)
        self._usage: dict[str, Any] | None = None
        self._calls: dict[int, _Call] = {}
        self._pending: tuple[Status, str | None] | None = None  # finished, terminal not yet written

    @property
    def finished(self) -> bool:
        return self._writer.finished

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        writer = self._writer
        if writer.finished:
            return []
        chunk_id = payload.get("id")
        events = writer.start(chunk_id if isinstance(chunk_id, str) and chunk_id else None)
        error = payload.get("error")
        if isinstance(error, Mapping):
            return events + writer.finish("failed", usage=self._usage, error=_error(error))
        usage = payload.get("usage")
        if isinstance(usage, Mapping):
            self._usage = hub_usage(usage)
        if self._pending is not None:
            return events + self._terminal()  # the chunk after the finish: usage, or the end
        choices = payload.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, Mapping):
            return events
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            delta = choice.get("message")  # a whole answer fed as one chunk
        if isinstance(delta, Mapping):
            events += self._delta(delta)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            events += self._flush_calls()
            incomplete = _INCOMPLETE.get(reason)
            self._pending = ("incomplete", incomplete) if incomplete else ("completed", None)
            if isinstance(usage, Mapping):
                events += self._terminal()
        return events

    def at_end(self) -> list[dict[str, Any]]:
        """The terminal event of a turn that finished but whose stream ended before the chunk after
        the finish (or of a whole JSON answer); nothing when the turn never finished."""
        if self._writer.finished or self._pending is None:
            return []
        return self._terminal()

    def _terminal(self) -> list[dict[str, Any]]:
        assert self._pending is not None
        status, reason = self._pending
        return self._writer.finish(status, usage=self._usage, reason=reason)

    def _delta(self, delta: Mapping[str, Any]) -> list[dict[str, Any]]:
        writer = self._writer
        events: list[dict[str, Any]] = []
        for name in _REASONING_FIELDS:
            thought = delta.get(name)
            if isinstance(thought, str) and thought:
                events += writer.reasoning(thought)
                break
        for name in ("content", "refusal"):
            text = delta.get(name)
            if isinstance(text, str) and text:
                events += writer.text(text)
        calls = delta.get("tool_calls")
        for piece in calls if isinstance(calls, list) else []:
            if isinstance(piece, Mapping):
                self._piece(piece)
        return events

    def _key(self, piece: Mapping[str, Any]) -> int:
        """The call a piece belongs to: its ``index``; without one (some servers send whole calls
        so), the call of its ``id``, a new call for a new ``id``, else the last call."""
        index = piece.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        calls = self._calls
        call_id = piece.get("id")
        if isinstance(call_id, str) and call_id:
            known = next((key for key, call in calls.items() if call.call_id == call_id), None)
            return known if known is not None else (max(calls) + 1 if calls else 0)
        return max(calls) if calls else 0

    def _piece(self, piece: Mapping[str, Any]) -> None:
        call = self._calls.setdefault(self._key(piece), _Call())
        call_id = piece.get("id")
        if isinstance(call_id, str) and call_id and not call.call_id:
            call.call_id = call_id
        function = piece.get("function")
        if isinstance(function, Mapping):
            name = function.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(arguments)
            elif isinstance(arguments, Mapping):  # a few servers send an object
                call.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _flush_calls(self) -> list[dict[str, Any]]:
        writer = self._writer
        events: list[dict[str, Any]] = []
        for key in sorted(self._calls):
            call = self._calls[key]
            call_id = call.call_id or "call_" + new_hex_id()
            arguments = "".join(call.arguments) or "{}"
            if call.name in self._custom:
                events += writer.custom_tool_call(call_id, call.name, _custom_input(arguments))
            else:
                events += writer.function_call(call_id, call.name, arguments)
        self._calls.clear()
        return events


def _custom_input(arguments: str) -> str:
    """The free text of a custom tool's call, described to the upstream as ``{"input": …}``."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(parsed, Mapping) and isinstance(parsed.get("input"), str):
        return str(parsed["input"])
    return arguments
