"""Reading an OpenAI Responses stream for what scheduling and records need, for any provider whose
upstream speaks Responses (PROTOCOLS §1.4).

Only a few event types are decoded: the first non-empty delta (HIST-5), the terminal event with its
usage, and errors. Everything else is relayed without being parsed.
"""

from __future__ import annotations

from typing import Any

from sublane_providers._observer import JsonStreamObserver
from sublane_providers._types import DeltaKind, Outcome, TokenUsage

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_SUCCESS, _INCOMPLETE, _ERROR = Outcome.SUCCESS, Outcome.INCOMPLETE, Outcome.ERROR

DELTA_EVENTS: dict[str, DeltaKind] = {
    "response.output_text.delta": DeltaKind.TEXT,
    "response.reasoning_text.delta": DeltaKind.REASONING,
    "response.reasoning_summary_text.delta": DeltaKind.REASONING_SUMMARY,
    "response.function_call_arguments.delta": DeltaKind.TOOL_ARGUMENTS,
    "response.custom_tool_call_input.delta": DeltaKind.TOOL_ARGUMENTS,
}
TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
_INTERESTING = frozenset(DELTA_EVENTS) | TERMINAL_EVENTS | {"response.created"}


def responses_usage(response: Any) -> TokenUsage | None:
    """Token counts of a Responses ``usage`` object; ``None`` when absent."""
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return TokenUsage(
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cached_tokens=_int(cached),
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def responses_error(payload: dict[str, Any]) -> tuple[str, str]:
    """``(code, message)`` of a ``response.failed`` or top-level ``error`` event."""
    error: Any = payload.get("error")
    if payload.get("type") == "response.failed":
        response = payload.get("response")
        error = response.get("error") if isinstance(response, dict) else None
    if not isinstance(error, dict):
        error = payload
    code = error.get("code") or error.get("type") or "upstream_error"
    message = error.get("message") or "The upstream reported an error."
    return str(code)[:64], str(message)[:500]


class ResponsesStreamObserver(JsonStreamObserver):
    """Updates a :class:`StreamState` from Responses event names and data, parsing as little as possible."""

    __slots__ = ()

    def wants(self, name: str | None) -> bool:
        """Whether an event of this name (``None``: unnamed) needs its data decoded."""
        if name is None:
            return True
        if name in DELTA_EVENTS:
            return self.state.first_delta is None
        return name in _INTERESTING

    def observe_answer(self, payload: dict[str, Any]) -> None:
        """Record a whole JSON answer: its usage, and for a ``response`` object its id and outcome
        (a compaction answer carries no ``status``: its outcome is the HTTP status's)."""
        state = self.state
        state.usage = responses_usage(payload)
        if payload.get("object") != "response":
            return
        if isinstance(payload.get("id"), str):
            state.response_id = payload["id"]
        status = payload.get("status")
        if status == "completed":
            state.outcome = _SUCCESS
        elif status == "incomplete":
            state.outcome = _INCOMPLETE
        elif status == "failed":
            state.outcome = _ERROR
            state.error_code, state.error_message = responses_error(
                {"type": "response.failed", "response": payload}
            )

    def observe_payload(self, payload: dict[str, Any]) -> None:
        """Record what an already decoded event tells (WebSocket frames arrive decoded)."""
        state = self.state
        kind = payload.get("type")
        if not isinstance(kind, str):
            return
        delta_kind = DELTA_EVENTS.get(kind)
        if delta_kind is not None:
            if state.first_delta is None and payload.get("delta"):
                state.first_delta = delta_kind
            return
        if kind == "response.created":
            response = payload.get("response")
            if isinstance(response, dict) and isinstance(response.get("id"), str):
                state.response_id = response["id"]
        elif kind == "response.completed":
            state.outcome = _SUCCESS
            state.usage = responses_usage(payload.get("response"))
        elif kind == "response.incomplete":
            state.outcome = _INCOMPLETE
            state.usage = responses_usage(payload.get("response"))
        elif kind in ("response.failed", "error"):
            state.outcome = _ERROR
            state.error_code, state.error_message = responses_error(payload)
            usage = responses_usage(payload.get("response"))
            if usage is not None:
                state.usage = usage
