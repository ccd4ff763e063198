"""The error ending of a pass-through stream whose upstream broke off (XLAT-1: bytes untouched before it)."""

from __future__ import annotations

import json

from sublane_core import WireProtocol
from sublane_protocols import cut_stream_ending


def _frame(raw: bytes) -> tuple[str, dict[str, object]]:
    name, data = raw.decode().removesuffix("\n\n").split("\n")
    return name.removeprefix("event: "), json.loads(data.removeprefix("data: "))


def test_xlat_1_a_cut_responses_stream_ends_with_response_failed() -> None:
    name, event = _frame(cut_stream_ending(WireProtocol.RESPONSES, "upstream_stream_error", "resp_1"))
    assert name == "response.failed" == event["type"]
    response = event["response"]
    assert isinstance(response, dict) and response["id"] == "resp_1" and response["status"] == "failed"
    assert response["error"]["code"] == "upstream_stream_error"


def test_xlat_1_a_cut_messages_stream_ends_with_an_error_event() -> None:
    name, event = _frame(cut_stream_ending(WireProtocol.MESSAGES, "request_timeout"))
    assert name == "error" and event["type"] == "error"
    error = event["error"]
    assert isinstance(error, dict) and error["code"] == "request_timeout" and error["type"]


def test_xlat_1_a_cut_gemini_stream_ends_with_an_error_chunk() -> None:
    raw = cut_stream_ending(WireProtocol.GEMINI, "upstream_stream_error")
    assert raw.startswith(b"data: ") and raw.endswith(b"\n\n")
    error = json.loads(raw.removeprefix(b"data: "))["error"]
    assert error["code"] == 502 and error["status"] and error["message"]


def test_other_protocols_add_nothing() -> None:
    assert cut_stream_ending(WireProtocol.CHAT_COMPLETIONS, "upstream_stream_error") == b""
