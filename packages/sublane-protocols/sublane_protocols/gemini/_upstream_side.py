"""Gemini as an upstream speaks it (unwrapped by its adapter when it wraps it), seen from the hub.

Requests: :mod:`sublane_protocols.gemini._from_responses`. Answers and stream chunks become hub
events here (:class:`GeminiEventsToResponses`):

- text parts → one message item (a delta per part); ``thought: true`` parts → a reasoning item
  (``thoughtSignature`` dropped, XLAT-2); a new item starts whenever the kind of output changes;
- ``functionCall`` parts, always whole in one chunk → one ``function_call`` item each
  (``call_id`` = the part's ``id``, else ``call_`` + random hex; ``arguments`` = the JSON of
  ``args`` in one delta), or a ``custom_tool_call`` when the hub body declared that tool as custom;
- other parts (``inlineData`` images of image models, ``executableCode``…) have no hub item and are
  dropped;
- ``finishReason`` ends the turn: STOP → ``response.completed``; MAX_TOKENS → ``response.incomplete``
  ``max_output_tokens``; SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII (and their image
  variants) → ``response.incomplete`` ``content_filter``; MALFORMED_FUNCTION_CALL and any other →
  ``response.failed``. A prompt blocked before any candidate (``promptFeedback.blockReason``) is
  ``content_filter`` too; an ``error`` object → ``response.failed``.

Failure codes are ones the Responses API defines (its SDK's ``error.code`` is a closed set):
``rate_limit_exceeded`` for ``RESOURCE_EXHAUSTED``, ``server_error`` for the rest; the Gemini
reason or status is in the message (``The model stopped with MALFORMED_FUNCTION_CALL.``).

Usage: ``input_tokens`` = ``promptTokenCount`` (which includes the cached tokens) +
``toolUsePromptTokenCount``, ``cached_tokens`` = ``cachedContentTokenCount``, ``output_tokens`` =
``candidatesTokenCount`` + ``thoughtsTokenCount``, ``reasoning_tokens`` = ``thoughtsTokenCount``.

The terminal event is written as soon as ``finishReason`` arrives (a Gemini stream may end with
EOF right after it), with the ``usageMetadata`` of that chunk, else the last one seen before it.
Usage sent on a chunk *after* the ``finishReason`` chunk is not in the terminal event (the turn is
over for the client by then); the gateway's records still get it, as the provider's observer reads
every upstream chunk itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Final

from sublane_core import WireProtocol, new_hex_id
from sublane_protocols._hub import UpstreamSide, custom_tool_names
from sublane_protocols.gemini._from_responses import gemini_count_request, gemini_request
from sublane_protocols.gemini._responses_events import ResponsesEventWriter

_COMPLETED: Final = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})
_FILTERED: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def hub_usage(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A Gemini ``usageMetadata`` as Responses ``usage``."""
    prompt = _count(metadata.get("promptTokenCount")) + _count(metadata.get("toolUsePromptTokenCount"))
    thoughts = _count(metadata.get("thoughtsTokenCount"))
    output = _count(metadata.get("candidatesTokenCount")) + thoughts
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": _count(metadata.get("cachedContentTokenCount")),
            "cache_write_tokens": 0,  # Gemini's implicit cache has no separately counted writes
        },
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": thoughts},
        "total_tokens": prompt + output,
    }


def _error(source: Mapping[str, Any]) -> dict[str, Any]:
    """An ``error`` object of a chunk (Google's RPC envelope) as a Responses error."""
    status = source.get("status")
    message = source.get("message")
    text = message if isinstance(message, str) and message else "The upstream failed."
    if isinstance(status, str) and status:
        text = f"{text} ({status})"
    code = "rate_limit_exceeded" if status == "RESOURCE_EXHAUSTED" else "server_error"
    return {"code": code, "message": text}


class GeminiEventsToResponses:
    """Gemini ``GenerateContentResponse`` chunks (unwrapped) in, hub events out, for one call."""

    __slots__ = ("_custom", "_usage", "_writer")

    def __init__(self, request: Mapping[str, Any], *, model: str, created_at: int | None = None) -> None:
        when = int(time.time()) if created_at is None else created_at
        self._writer = ResponsesEventWriter(model=model, request=request, created_at=when)
        self._custom = custom_tool_names(request)
        self._usage: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self._writer.finished

    def feed(self, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
        writer = self._writer
        if writer.finished:
            return []
        response_id = payload.get("responseId")
        events = writer.start(response_id if isinstance(response_id, str) else None)
        error = payload.get("error")
        if isinstance(error, Mapping):
            return events + writer.finish("failed", usage=self._usage, error=_error(error))
        metadata = payload.get("usageMetadata")
        if isinstance(metadata, Mapping):
            self._usage = hub_usage(metadata)
        candidates = payload.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if isinstance(candidate, Mapping):
            content = candidate.get("content")
            parts = content.get("parts") if isinstance(content, Mapping) else None
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, Mapping):
                    events += self._part(part)
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                events += self._finish(reason, candidate.get("finishMessage"))
        elif candidate is None:
            feedback = payload.get("promptFeedback")
            if isinstance(feedback, Mapping) and feedback.get("blockReason"):
                events += writer.finish("incomplete", usage=self._usage, reason="content_filter")
        return events

    def close(self) -> list[dict[str, Any]]:
        """The terminal event of a whole JSON answer that named no finish reason (it is complete)."""
        return self._writer.finish("completed", usage=self._usage)

    def _part(self, part: Mapping[str, Any]) -> list[dict[str, Any]]:
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            raw_name, raw_id, raw_args = call.get("name"), call.get("id"), call.get("args")
            name = raw_name if isinstance(raw_name, str) else ""
            call_id = raw_id if isinstance(raw_id, str) and raw_id else "call_" + new_hex_id()
            args: Mapping[str, Any] = raw_args if isinstance(raw_args, Mapping) else {}
            if name in self._custom:
                text = args.get("input")
                text = text if isinstance(text, str) else json.dumps(args, ensure_ascii=False)
                return self._writer.custom_tool_call(call_id, name, text)
            return self._writer.function_call(call_id, name, json.dumps(args, ensure_ascii=False))
        text = part.get("text")
        if not isinstance(text, str) or not text:
            return []
        if part.get("thought") is True:
            return self._writer.reasoning(text)
        return self._writer.text(text)

    def _finish(self, reason: str, detail: Any) -> list[dict[str, Any]]:
        writer = self._writer
        if reason in _COMPLETED:
            return writer.finish("completed", usage=self._usage)
        if reason == "MAX_TOKENS":
            return writer.finish("incomplete", usage=self._usage, reason="max_output_tokens")
        if reason in _FILTERED:
            return writer.finish("incomplete", usage=self._usage, reason="content_filter")
        message = f"The model stopped with {reason}."
        if isinstance(detail, str) and detail:
            message = f"{message} {detail}"
        return writer.finish("failed", usage=self._usage, error={"code": "server_error", "message": message})


def _terminal_response(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    for event in reversed(events):
        if event.get("type") in ("response.completed", "response.incomplete", "response.failed"):
            response: dict[str, Any] = event["response"]
            return response
    return None


class GeminiUpstreamSide(UpstreamSide):
    """Gemini ``generateContent`` to and from the Responses hub."""

    protocol = WireProtocol.GEMINI

    def request_from_responses(self, body: Mapping[str, Any], *, system_prelude: str = "") -> dict[str, Any]:
        return gemini_request(body, system_prelude=system_prelude)

    def new_events(self, request: Mapping[str, Any], *, model: str) -> GeminiEventsToResponses:
        return GeminiEventsToResponses(request, model=model)

    def answer_to_responses(
        self, final: Mapping[str, Any], *, model: str, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        translator = GeminiEventsToResponses(request, model=model)
        events = translator.feed(final)
        if not translator.finished:
            events += translator.close()
        response = _terminal_response(events)
        assert response is not None  # close() always ends the turn
        return response

    def count_request_from_responses(
        self, body: Mapping[str, Any], *, system_prelude: str = ""
    ) -> dict[str, Any] | None:
        return gemini_count_request(body, system_prelude=system_prelude)

    def counted_tokens(self, answer: Mapping[str, Any]) -> int:
        return _count(answer.get("totalTokens"))
