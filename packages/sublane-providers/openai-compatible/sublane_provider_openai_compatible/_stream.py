"""Reading a Chat Completions stream for what scheduling and records need (PAID-1).

Chunks are unnamed ``data:`` lines, so each is decoded: the first non-empty delta (text, reasoning
as ``reasoning_content``/``reasoning``, or tool-call arguments) is the first output (HIST-5); the
``finish_reason`` says how the turn ended; ``usage`` comes on the chunk *after* it (with
``stream_options.include_usage``, which every request asks for) or on the finish chunk itself.
The outcome is set once the usage is known — on the usage chunk, or on ``data: [DONE]`` (no JSON)
when a server sent none — so the call is recorded with its tokens. A stream that ends without a
finish reason has no outcome: it was cut. An ``{"error": …}`` line fails the call.
"""

from __future__ import annotations

from typing import Any

from sublane_providers import DeltaKind, Outcome, StreamState, TokenUsage
from sublane_providers.kit import JsonStreamObserver, safe_message

DONE = "[DONE]"
_FINISHED = {"length": Outcome.INCOMPLETE, "content_filter": Outcome.INCOMPLETE}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def chat_usage(usage: Any) -> TokenUsage | None:
    """Token counts of a Chat Completions ``usage`` (``prompt_tokens`` includes the cached ones)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return TokenUsage(
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
        cached_tokens=_count(cached),
    )


def _error(error: dict[str, Any]) -> tuple[str, str]:
    """The code and message of an in-stream error, read as the kit reads an error answer: a text
    ``code``, else the ``type`` (servers like vLLM give the HTTP status as a number ``code`` and
    name the error in ``type``), else that status as ``http_<status>``."""
    code = error.get("code")
    kind = error.get("type")
    if not (isinstance(code, str) and code):
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        code = kind if isinstance(kind, str) and kind else f"http_{status}" if status else "upstream_error"
    message = error.get("message")
    text = safe_message(message) if isinstance(message, str) and message else "The server failed."
    return safe_message(str(code))[:64], text


def _delta_kind(delta: Any) -> DeltaKind | None:
    if not isinstance(delta, dict):
        return None
    if delta.get("reasoning_content") or delta.get("reasoning"):
        return DeltaKind.REASONING
    if delta.get("content") or delta.get("refusal"):
        return DeltaKind.TEXT
    if delta.get("tool_calls"):
        return DeltaKind.TOOL_ARGUMENTS
    return None


class ChatStreamObserver(JsonStreamObserver):
    """Updates a :class:`StreamState` from ``chat.completion.chunk`` lines."""

    __slots__ = ("_finished",)

    def __init__(self, state: StreamState | None = None) -> None:
        super().__init__(state)
        self._finished: Outcome | None = None  # the finish reason's outcome, until the usage came

    def wants(self, name: str | None) -> bool:
        return True  # every chunk may carry the finish reason or the usage

    def observe(self, name: str | None, data: str | None) -> dict[str, Any] | None:
        if data is not None and data.strip() == DONE:
            self.state.events += 1
            self._end()
            return None
        return super().observe(name, data)

    def observe_data(self, name: str | None, data: bytes | None) -> dict[str, Any] | None:
        if data is not None and data.strip() == DONE.encode():
            self.state.events += 1
            self._end()
            return None
        return super().observe_data(name, data)

    def _end(self) -> None:
        state = self.state
        if state.outcome is None and self._finished is not None:
            state.outcome = self._finished

    def observe_payload(self, payload: dict[str, Any]) -> None:
        state = self.state
        if state.outcome is not None:
            return
        error = payload.get("error")
        if isinstance(error, dict):
            state.outcome = Outcome.ERROR
            state.error_code, state.error_message = _error(error)
            return
        if state.response_id is None and isinstance(payload.get("id"), str):
            state.response_id = payload["id"]
        usage = chat_usage(payload.get("usage"))
        if usage is not None:
            state.usage = usage
        choices = payload.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(choice, dict):
            if state.first_delta is None:
                state.first_delta = _delta_kind(choice.get("delta"))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason and self._finished is None:
                self._finished = _FINISHED.get(reason, Outcome.SUCCESS)
                if usage is None:
                    return  # the usage chunk follows
        if self._finished is not None and (usage is not None or choice is None):
            state.outcome = self._finished

    def observe_answer(self, payload: dict[str, Any]) -> None:
        """A whole ``chat.completion``: its id, usage and finish reason."""
        state = self.state
        error = payload.get("error")
        if isinstance(error, dict):
            state.outcome = Outcome.ERROR
            state.error_code, state.error_message = _error(error)
            return
        if isinstance(payload.get("id"), str):
            state.response_id = payload["id"]
        state.usage = chat_usage(payload.get("usage"))
        choices = payload.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        state.outcome = _FINISHED.get(reason, Outcome.SUCCESS) if isinstance(reason, str) else Outcome.SUCCESS
