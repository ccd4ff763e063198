"""The client's framing of a stream whose payloads need no translation, only re-framing.

Used on the diagonal (client and upstream speak one protocol) when the upstream wraps each event
(Antigravity's ``{"response": …}``) or the client asked for another framing than SSE (Gemini's
``:streamGenerateContent`` without ``alt=sse`` answers one JSON array, streamed element by
element).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from sublane_core.sse import frame

Unwrap = Callable[[dict[str, Any]], dict[str, Any]]
ErrorBody = Callable[[str], Mapping[str, Any]]


def json_bytes(payload: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON; lone surrogates a client sent pass through as they came."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def named_sse(event: Mapping[str, Any]) -> bytes:
    """One SSE frame named after the event's ``type`` (Responses and Anthropic streams)."""
    return frame(json_bytes(event), str(event.get("type", "message")).encode())


class ReframedStream:
    """Decoded upstream events in, the client's frames out (a :class:`StreamTranslator`)."""

    __slots__ = ("_error_body", "_json_array", "_sent", "_unwrap")

    def __init__(self, unwrap: Unwrap, error_body: ErrorBody, *, json_array: bool = False) -> None:
        self._unwrap = unwrap
        self._error_body = error_body
        self._json_array = json_array
        self._sent = 0

    @property
    def finished(self) -> bool:
        return False  # the relay knows when the upstream finished; this framing adds nothing then

    def _frame(self, payload: Mapping[str, Any]) -> bytes:
        data = json_bytes(payload)
        self._sent += 1
        if self._json_array:
            return (b"[" if self._sent == 1 else b",\r\n") + data
        return frame(data, crlf=True)

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        return self._frame(self._unwrap(dict(payload)))

    def trailer(self, error_code: str | None) -> bytes:
        """An error element when the stream broke off (``error_code``), and the array's end."""
        out = b"" if error_code is None else self._frame(self._error_body(error_code))
        if self._json_array:
            out += (b"[" if self._sent == 0 else b"") + b"]"
        return out
