"""Gemini as a client speaks it (Gemini CLI 0.61, ``google-genai``), to and from the Responses hub.

Requests: :mod:`sublane_protocols.gemini._to_responses`; streams: :mod:`sublane_protocols.gemini._frames`.
A JSON answer is one ``GenerateContentResponse`` built from the final ``output``: reasoning
summaries as ``thought: true`` parts (always: the call's body is not known here, and
``google-genai``'s ``.text`` and the Gemini CLI leave thought parts out of the answer text), message
text, then each tool call as a ``functionCall`` part with the hub's ``call_id`` as ``id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import WireProtocol
from sublane_protocols._hub import ClientSide
from sublane_protocols.gemini._frames import GeminiFrames, call_part, finish_reason, gemini_usage
from sublane_protocols.gemini._intent import generate_request
from sublane_protocols.gemini._to_responses import responses_request


def wants_thoughts(body: Mapping[str, Any]) -> bool:
    """Whether the client asked to see thoughts (``thinkingConfig.includeThoughts``)."""
    config = generate_request(body).get("generationConfig")
    thinking = config.get("thinkingConfig") if isinstance(config, Mapping) else None
    if not isinstance(thinking, Mapping):
        return False
    return (thinking.get("includeThoughts", thinking.get("include_thoughts"))) is True


def _texts(parts: Any, kinds: tuple[str, ...]) -> list[str]:
    """The texts of the parts of ``kinds`` (``refusal`` parts keep theirs in ``refusal``)."""
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, Mapping) and part.get("type") in kinds:
            text = part.get("text", part.get("refusal"))
            if isinstance(text, str) and text:
                texts.append(text)
    return texts


def _parts(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = item.get("type")
    if kind == "reasoning":
        texts = _texts(item.get("summary"), ("summary_text",))
        return [{"text": "\n\n".join(texts), "thought": True}] if texts else []
    if kind == "message":
        return [{"text": text} for text in _texts(item.get("content"), ("output_text", "refusal"))]
    if kind in ("function_call", "custom_tool_call"):
        return [call_part(item)]
    return []


class GeminiClientSide(ClientSide):
    """A Gemini ``generateContent`` client served through the hub."""

    protocol = WireProtocol.GEMINI

    def request_to_responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return responses_request(body)

    def new_frames(
        self, body: Mapping[str, Any], *, model: str, created: int, json_array: bool = False
    ) -> GeminiFrames:
        return GeminiFrames(model=model, include_thoughts=wants_thoughts(body), json_array=json_array)

    def answer_from_responses(self, final: Mapping[str, Any], *, model: str, created: int) -> dict[str, Any]:
        """One ``GenerateContentResponse``; ``ValueError`` for a failed turn (it has no answer)."""
        status = final.get("status")
        if status not in ("completed", "incomplete"):
            raise ValueError(f"expected a completed or incomplete response, got status {status!r}")
        output = final.get("output")
        items = output if isinstance(output, list) else []
        parts = [part for item in items if isinstance(item, Mapping) for part in _parts(item)]
        answer: dict[str, Any] = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": finish_reason(final),
                    "index": 0,
                }
            ],
            "usageMetadata": gemini_usage(final.get("usage")),
            "modelVersion": model,
        }
        if isinstance(final.get("id"), str):
            answer["responseId"] = final["id"]
        return answer

    def count_answer(self, tokens: int) -> dict[str, Any]:
        return {"totalTokens": tokens}
