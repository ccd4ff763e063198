"""Gemini answers in Code Assist's envelope: ``{"response": <GenerateContentResponse>}``.

A JSON answer is wrapped once; a stream (``alt=sse``) is wrapped event by event, each ``data:``
line one enveloped JSON object, as Code Assist streams (PROTOCOLS §3.4). Errors are not wrapped:
Code Assist answers them in Google's RPC envelope (``{"error": {…}}``), the Gemini API's own shape;
an error event inside a stream stays as it is. Comments (keep-alives) pass unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import json_dumps, json_loads
from sublane_core.sse import SseFramer, event_fields, frame


def enveloped(answer: Mapping[str, Any]) -> dict[str, Any]:
    """One Gemini answer in the envelope; an error object as it is."""
    if "error" in answer and "candidates" not in answer:
        return dict(answer)
    return {"response": answer}


def enveloped_json(content: bytes) -> bytes:
    """A Gemini JSON answer's bytes, enveloped (a body that is not an object passes unchanged)."""
    try:
        answer = json_loads(content)
    except ValueError:
        return content
    if not isinstance(answer, dict):
        return content
    return json_dumps(enveloped(answer), errors="surrogatepass")


class EnvelopedStream:
    """A Gemini SSE stream in, the same events enveloped out; chunks may split events anywhere."""

    __slots__ = ("_framer",)

    def __init__(self) -> None:
        self._framer = SseFramer()

    def feed(self, chunk: bytes) -> bytes:
        """The enveloped form of the complete events so far (``b""`` while an event is partial)."""
        return b"".join(_event(block) for block in self._framer.feed(chunk))

    def rest(self) -> bytes:
        """What is left when the stream ends: an unfinished event, enveloped if it can be."""
        rest = self._framer.rest()
        return _event(rest + b"\r\n\r\n") if rest.strip() else rest


def _event(block: bytes) -> bytes:
    _name, data = event_fields(block)
    if data is None:  # a comment or an empty block: as it came
        return block
    try:
        payload = json_loads(data)
    except ValueError:
        return block
    if not isinstance(payload, dict):
        return block
    return frame(json_dumps(enveloped(payload), errors="surrogatepass"), crlf=True)
