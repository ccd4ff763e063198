"""Reading the Gemini API's answers: ``data:`` chunks of ``GenerateContentResponse``, or one.

Each chunk is ``{candidates, usageMetadata, modelVersion, responseId}``; thought parts
(``thought: true``) are reasoning, ``functionCall`` parts are tool calls, the last chunk carries
``finishReason`` and the final ``usageMetadata``; an error mid-stream is a chunk ``{"error": …}``.
Usage: ``promptTokenCount`` includes ``cachedContentTokenCount``; ``thoughtsTokenCount`` counts
as output, as every provider counts reasoning. Zero counts are absent (proto3 JSON), so a prompt
counted without ``cachedContentTokenCount`` had none cached (COST-4: 0, not "no data").
"""

from __future__ import annotations

from typing import Any

from sublane_providers import DeltaKind, Outcome, TokenUsage
from sublane_providers.kit import JsonStreamObserver, safe_message

SUCCESS_REASONS = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_of(response: dict[str, Any]) -> TokenUsage | None:
    """Token counts of a ``usageMetadata``; ``None`` when absent."""
    usage = response.get("usageMetadata")
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("promptTokenCount"))
    tool_prompt = _count(usage.get("toolUsePromptTokenCount")) or 0
    candidates = _count(usage.get("candidatesTokenCount"))
    thoughts = _count(usage.get("thoughtsTokenCount")) or 0
    cached = _count(usage.get("cachedContentTokenCount"))
    if cached is None and prompt is not None:
        cached = 0  # proto3 JSON leaves a zero count out: a counted prompt without it missed the cache
    return TokenUsage(
        input_tokens=None if prompt is None else prompt + tool_prompt,
        output_tokens=None if candidates is None and not thoughts else (candidates or 0) + thoughts,
        cached_tokens=cached,
    )


class GeminiStreamObserver(JsonStreamObserver):
    """Updates a :class:`StreamState` from Gemini API chunks (unnamed events: all decoded)."""

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
            status = error.get("status")
            message = error.get("message")
            state.error_code = (status if isinstance(status, str) and status else "upstream_error").lower()[
                :64
            ]
            state.error_message = (
                safe_message(message) if isinstance(message, str) else "The upstream failed."
            )
            return
        if state.response_id is None and isinstance(payload.get("responseId"), str):
            state.response_id = payload["responseId"]
        candidates = payload.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if isinstance(candidate, dict):
            if state.first_delta is None:
                state.first_delta = _first_delta(candidate)
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                state.outcome = Outcome.SUCCESS if reason in SUCCESS_REASONS else Outcome.INCOMPLETE
                if state.outcome is Outcome.INCOMPLETE:
                    state.extras["finish_reason"] = reason
        feedback = payload.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if isinstance(blocked, str) and blocked and candidate is None:
            state.outcome = Outcome.INCOMPLETE  # the prompt was blocked: no candidate comes
            state.extras["finish_reason"] = blocked[:64]
        usage = usage_of(payload)
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
