"""CLIENT-6: Code Assist's request wrapper and answer envelope, without a gateway."""

from __future__ import annotations

import json

import pytest

from sublane_core import SubLaneError
from sublane_protocols.code_assist import (
    EnvelopedStream,
    ModelRoom,
    available_models_answer,
    count_call,
    enveloped_json,
    generate_call,
    user_quota_answer,
)

_EVENTS = (
    b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]}\r\n\r\n'
    b": keep-alive\n\n"
    b'data: {"candidates":[{"content":{"parts":[{"text":"lo"}]},"finishReason":"STOP"}]}\r\n\r\n'
    b'data: {"error":{"code":502,"message":"cut","status":"INTERNAL"}}\r\n\r\n'
)


def _payloads(stream: bytes) -> list[dict[str, object]]:
    return [
        json.loads(line[6:])
        for line in stream.replace(b"\r\n", b"\n").split(b"\n")
        if line.startswith(b"data: ")
    ]


@pytest.mark.parametrize("size", [1, 7, 64, len(_EVENTS)])
def test_client_6_stream_envelope_whatever_the_chunking(size: int) -> None:
    stream = EnvelopedStream()
    out = b"".join(stream.feed(_EVENTS[start : start + size]) for start in range(0, len(_EVENTS), size))
    out += stream.rest()
    payloads = _payloads(out)
    assert [list(payload) for payload in payloads] == [["response"], ["response"], ["error"]]
    assert b": keep-alive\n\n" in out  # comments pass as they came
    assert out.count(b"\r\n\r\n") == 3  # one event out per event in


def test_client_6_json_envelope_and_errors_unwrapped() -> None:
    answer = b'{"candidates":[{"content":{"parts":[{"text":"hi"}]}}],"usageMetadata":{"totalTokenCount":3}}'
    assert json.loads(enveloped_json(answer)) == {"response": json.loads(answer)}
    error = b'{"error":{"code":429,"message":"busy","status":"RESOURCE_EXHAUSTED"}}'
    assert json.loads(enveloped_json(error)) == json.loads(error)


def test_client_6_generate_call_unwraps_the_gemini_request_and_its_session() -> None:
    body = {
        "model": "models/gemini-3-flash",
        "project": "p",
        "user_prompt_id": "x",
        "request": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "session_id": "s-1"},
    }
    call = generate_call(body)
    assert call.model == "gemini-3-flash"
    assert call.body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert call.session == "s-1"
    assert body["request"]["session_id"] == "s-1"  # the client's body is not changed
    antigravity = generate_call({"model": "gemini-3-flash", "request": {"contents": [], "sessionId": "-42"}})
    assert antigravity.session == "-42" and "sessionId" not in antigravity.body


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"model": "m"},
        {"model": "", "request": {}},
        {"model": 3, "request": {}},
        {"model": "m", "request": []},
    ],
)
def test_client_6_generate_call_refuses_what_is_not_a_code_assist_body(body: dict[str, object]) -> None:
    with pytest.raises(SubLaneError) as raised:
        generate_call(body)
    assert raised.value.status == 400


def test_client_6_count_call_takes_the_model_from_inside() -> None:
    call = count_call(
        {"request": {"model": "models/gemini-3-flash", "contents": [{"parts": [{"text": "a"}]}]}}
    )
    assert (call.model, call.body) == ("gemini-3-flash", {"contents": [{"parts": [{"text": "a"}]}]})
    with pytest.raises(SubLaneError):
        count_call({"request": {"contents": []}})


def test_client_6_quota_answers_leave_an_unknown_room_out() -> None:
    rooms = {"a": ModelRoom(0.25, 1_800_000_000.0), "b": ModelRoom(None, None)}
    buckets = user_quota_answer(rooms)["buckets"]
    assert buckets == [
        {
            "modelId": "a",
            "tokenType": "REQUESTS",
            "remainingFraction": 0.25,
            "resetTime": "2027-01-15T08:00:00Z",
        },
        {"modelId": "b", "tokenType": "REQUESTS"},
    ]
    models = available_models_answer(rooms)["models"]
    assert models["a"]["quotaInfo"] == {"remainingFraction": 0.25, "resetTime": "2027-01-15T08:00:00Z"}
    assert models["b"]["quotaInfo"] == {}
