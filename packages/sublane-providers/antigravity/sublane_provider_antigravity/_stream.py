"""Reading an Antigravity stream (PROTOCOLS §3.4): ``data:`` chunks wrapping Gemini responses.

Each chunk is ``{"response": {candidates, usageMetadata, modelVersion, responseId}, "traceId"}``;
thought parts (``thought: true``) are reasoning, ``functionCall`` parts are tool calls, the last
chunk carries ``finishReason`` and the final ``usageMetadata``. Usage: ``promptTokenCount``
includes the cached tokens; thoughts count as output, as every other provider counts reasoning.
"""

from __future__ import annotations

from typing import Any

from sublane_providers import DeltaKind, Outcome, TokenUsage
from sublane_providers.kit import JsonStreamObserver

SUCCESS_REASONS = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})


def unwrap(payload: dict[str, Any]) -> dict[str, Any]:
    """The Gemini response inside an Antigravity chunk (a bare response is returned as it is)."""
    inner = payload.get("response")
    return inner if isinstance(inner, dict) else payload


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_of(response: dict[str, Any]) -> TokenUsage | None:
    """Token counts of a Gemini ``usageMetadata``; ``None`` when absent."""
    usage = response.get("usageMetadata")
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("promptTokenCount"))
    tool_prompt = _count(usage.get("toolUsePromptTokenCount")) or 0
    candidates = _count(usage.get("candidatesTokenCount"))
    thoughts = _count(usage.get("thoughtsTokenCount")) or 0
    return TokenUsage(
        input_tokens=None if prompt is None else prompt + tool_prompt,
        output_tokens=None if candidates is None and not thoughts else (candidates or 0) + thoughts,
        cached_tokens=_count(usage.get("cachedContentTokenCount")),
    )


class AntigravityStreamObserver(JsonStreamObserver):
    """Updates a :class:`StreamState` from Antigravity chunks (every chunk is decoded: no names)."""

    __slots__ = ()

    def wants(self, name: str | None) -> bool:
        return True

    def observe_answer(self, payload: dict[str, Any]) -> None:
        self.observe_payload(payload)

    def observe_payload(self, payload: dict[str, Any]) -> None:
        state = self.state
        error = payload.get("error")
        if isinstance(error, dict):
            state.outcome = Outcome.ERROR
            reason = error.get("status") if isinstance(error.get("status"), str) else "upstream_error"
            message = (
                error.get("message") if isinstance(error.get("message"), str) else "The upstream failed."
            )
            state.error_code, state.error_message = str(reason).lower()[:64], str(message)[:500]
            return
        response = unwrap(payload)
        if state.response_id is None and isinstance(response.get("responseId"), str):
            state.response_id = response["responseId"]
        candidates = response.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if isinstance(candidate, dict):
            if state.first_delta is None:
                state.first_delta = _first_delta(candidate)
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                state.outcome = Outcome.SUCCESS if reason in SUCCESS_REASONS else Outcome.INCOMPLETE
                if state.outcome is Outcome.INCOMPLETE:
                    state.extras["finish_reason"] = reason
        usage = usage_of(response)
        if usage is not None:
            state.usage = usage


def _first_delta(candidate: dict[str, Any]) -> DeltaKind | None:
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("functionCall"):
            return DeltaKind.TOOL_ARGUMENTS
        if isinstance(part.get("text"), str) and part["text"]:
            return DeltaKind.REASONING if part.get("thought") is True else DeltaKind.TEXT
    return None
