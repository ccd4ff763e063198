"""``ChatOverResponses`` on captured Responses streams: golden frames, checked by the ``openai`` SDK.

Each fixture of ``fixtures/responses_streams/`` is fed event by event through
``ChatOverResponses().new_stream(...)``; the frames each event produced (decoded from their
``data:`` lines, the random completion ``id`` normalized) and the ``trailer`` are compared with
``fixtures/golden/chat_over_responses/<fixture>.json``, as is ``answer()`` of the response that a
``ResponsesCollector`` reads from the same events. ``SUBLANE_UPDATE_GOLDENS=1`` rewrites them.

Independently of the goldens, the ``openai`` SDK must accept the result: every chunk validates as
``ChatCompletionChunk``, the bytes stream through a real ``OpenAI`` client (``httpx2``
``MockTransport``) whose chunks ``ChatCompletionStreamState`` accumulates into the text, reasoning,
tool calls (with the upstream's call ids), finish reason and usage that the upstream events hold,
and ``answer()`` validates as ``ChatCompletion`` and agrees with the accumulated stream.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from protocol_fixtures import STREAMS, TERMINAL_EVENTS, check_golden, stream_events
from pydantic import TypeAdapter

from sublane_protocols import ResponsesCollector
from sublane_protocols.chat import ChatFrames, ChatOverResponses

MODEL = "gpt-5-codex"
CREATED = 1_796_115_600
COMPLETION_ID = re.compile(r"chatcmpl-[0-9a-f]{24}")
NORMALIZED_ID = "chatcmpl-<normalized>"
DONE = "[DONE]"
_STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)

CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]},
        },
    }
    for name, description, arg in (
        ("shell", "Run a shell command.", "cmd"),
        ("read_file", "Read a file.", "path"),
    )
]


@dataclass(frozen=True)
class Outcome:
    """What the client must see at the end of a fixture's stream."""

    finish_reason: str | None = None
    error_code: str | None = None
    error_type: str | None = None


OUTCOMES = {
    "plain_text": Outcome(finish_reason="stop"),
    "reasoning_summary_text": Outcome(finish_reason="stop"),
    "parallel_function_calls": Outcome(finish_reason="tool_calls"),
    "incomplete_max_tokens": Outcome(finish_reason="length"),
    "failed_mid_stream": Outcome(error_code="server_is_overloaded", error_type="server_error"),
    "error_event_mid_stream": Outcome(error_code="rate_limit_exceeded", error_type="rate_limit_error"),
    "cut_before_terminal": Outcome(error_code="upstream_stream_error", error_type="server_error"),
}
COMPLETED = [name for name in STREAMS if OUTCOMES[name].finish_reason is not None]
FAILED = [name for name in STREAMS if OUTCOMES[name].error_code is not None]


def chat_body(name: str, *, include_usage: bool = True) -> dict[str, Any]:
    """The Chat Completions request a client sent for the fixture's turn."""
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if name == "parallel_function_calls":
        body["tools"] = CHAT_TOOLS
        body["parallel_tool_calls"] = True
    return body


# --- what the upstream events say, read without the translator ---------------------------------


@dataclass
class UpstreamTurn:
    text: str = ""
    reasoning_parts: dict[tuple[str, int], str] = field(default_factory=dict)
    calls: list[dict[str, str]] = field(default_factory=list)
    usage: dict[str, Any] | None = None

    @property
    def reasoning(self) -> str | None:
        return "\n\n".join(self.reasoning_parts.values()) or None


def upstream_turn(events: list[dict[str, Any]]) -> UpstreamTurn:
    turn = UpstreamTurn()
    for event in events:
        kind = event["type"]
        if kind == "response.output_text.delta":
            turn.text += event["delta"]
        elif kind == "response.reasoning_summary_text.delta":
            key = (event["item_id"], event["summary_index"])
            turn.reasoning_parts[key] = turn.reasoning_parts.get(key, "") + event["delta"]
        elif kind == "response.output_item.done" and event["item"]["type"] == "function_call":
            item = event["item"]
            turn.calls.append({"id": item["call_id"], "name": item["name"], "arguments": item["arguments"]})
        elif kind in ("response.completed", "response.incomplete"):
            turn.usage = event["response"]["usage"]
    return turn


def chat_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Responses usage as Chat Completions names it (cached and reasoning counts are subsets)."""
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
        "prompt_tokens_details": {"cached_tokens": usage["input_tokens_details"]["cached_tokens"]},
        "completion_tokens_details": {"reasoning_tokens": usage["output_tokens_details"]["reasoning_tokens"]},
    }


# --- running the translator --------------------------------------------------------------------


def decode_frames(data: bytes) -> list[Any]:
    """``data: <json>\\n\\n`` frames → their payloads (``"[DONE]"`` for the end marker)."""
    assert data.endswith(b"\n\n") or not data, data
    frames: list[Any] = []
    for block in data.decode().split("\n\n")[:-1]:
        assert block.startswith("data: ") and "\n" not in block, block
        payload = block.removeprefix("data: ")
        frames.append(DONE if payload == DONE else json.loads(payload))
    return frames


@dataclass
class StreamRun:
    steps: list[dict[str, Any]]  # {"after": "<index> <event type>" | "trailer", "frames": [...]}
    raw: bytes
    finished_before_trailer: bool

    @property
    def frames(self) -> list[Any]:
        return [frame for step in self.steps for frame in step["frames"]]

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [f for f in self.frames if isinstance(f, dict) and f.get("object") == "chat.completion.chunk"]


def run_stream(name: str, *, include_usage: bool = True) -> StreamRun:
    frames: ChatFrames = ChatOverResponses().new_stream(
        chat_body(name, include_usage=include_usage), model=MODEL, created=CREATED
    )
    steps: list[dict[str, Any]] = []
    raw = b""
    for index, event in enumerate(stream_events(name)):
        out = frames.feed(event)
        raw += out
        if out:
            steps.append({"after": f"{index} {event['type']}", "frames": decode_frames(out)})
    finished = frames.finished
    trailer = frames.trailer(None)
    raw += trailer
    steps.append({"after": "trailer", "frames": decode_frames(trailer)})
    return StreamRun(steps, raw, finished)


def normalized(value: Any) -> Any:
    """``value`` with every completion id replaced (they are random per stream)."""
    value = copy.deepcopy(value)
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and "id" in item:
            assert COMPLETION_ID.fullmatch(item["id"]), item["id"]
            item["id"] = NORMALIZED_ID
    return value


def normalized_steps(run: StreamRun) -> list[dict[str, Any]]:
    return [{"after": step["after"], "frames": normalized(step["frames"])} for step in run.steps]


def collected(name: str) -> dict[str, Any] | None:
    collector = ResponsesCollector()
    for event in stream_events(name):
        collector.feed(event)
    return collector.result()


def answer_of(name: str) -> dict[str, Any] | None:
    final = collected(name)
    if final is None or final.get("status") not in ("completed", "incomplete"):
        return None
    return ChatOverResponses().answer(final, model=MODEL, created=CREATED)


def openai_client(status: int, content: bytes, content_type: str, **options: Any) -> openai.OpenAI:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers={"content-type": content_type}, content=content)

    transport = httpx2.MockTransport(handler)
    return openai.OpenAI(
        api_key="sl_test",
        base_url="http://sublane.test/v1",
        http_client=httpx2.Client(transport=transport),
        max_retries=0,
        **options,
    )


def accumulate(chunks: Iterable[ChatCompletionChunk], state: ChatCompletionStreamState[Any]) -> None:
    for chunk in chunks:
        state.handle_chunk(chunk)


# --- the fixtures are what they claim to be ----------------------------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_fixture_is_a_codex_event_sequence(name: str) -> None:
    events = stream_events(name)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created"
    terminals = [event["type"] for event in events if event["type"] in TERMINAL_EVENTS | {"error"}]
    assert terminals == ([] if name == "cut_before_terminal" else [events[-1]["type"]])
    for event in events:
        if event["type"] not in TERMINAL_EVENTS:  # the SDK's terminal types lag the Codex backend
            _STREAM_EVENT.validate_python(event)


# --- streams ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_stream_frames_match_golden(name: str) -> None:
    run = run_stream(name)
    golden = {
        "fixture": f"responses_streams/{name}.json",
        "chat_request": chat_body(name),
        "stream": normalized_steps(run),
        "answer": normalized(answer_of(name)),
    }
    check_golden(f"chat_over_responses/{name}.json", golden)


@pytest.mark.parametrize("name", STREAMS)
def test_stream_is_one_completion_ending_with_done(name: str) -> None:
    run = run_stream(name)
    assert run.frames[-1] == DONE and run.frames.count(DONE) == 1
    assert len({chunk["id"] for chunk in run.chunks}) == 1
    assert {(chunk["created"], chunk["model"]) for chunk in run.chunks} == {(CREATED, MODEL)}
    first = run.chunks[0]["choices"][0]["delta"]
    assert first == {"role": "assistant", "content": ""}
    assert run.finished_before_trailer is (name != "cut_before_terminal")


@pytest.mark.parametrize("name", STREAMS)
def test_every_chunk_is_an_sdk_chat_completion_chunk(name: str) -> None:
    for chunk in run_stream(name).chunks:
        parsed = ChatCompletionChunk.model_validate(chunk)
        assert parsed.model_dump(mode="json", exclude_unset=True) == chunk


@pytest.mark.parametrize("name", COMPLETED)
def test_sdk_stream_accumulates_to_what_upstream_sent(name: str) -> None:
    run = run_stream(name)
    upstream = upstream_turn(stream_events(name))
    body = chat_body(name)
    state = ChatCompletionStreamState()
    with openai_client(200, run.raw, "text/event-stream") as client:
        received = [chunk for chunk in client.chat.completions.create(**body)]
    for chunk in received:
        state.handle_chunk(chunk)
    assert [c.model_dump(mode="json", exclude_unset=True) for c in received] == run.chunks
    # The snapshot, not get_final_completion(): the SDK's parse step refuses finish_reason "length".
    choice = state.current_completion_snapshot.choices[0]
    message = choice.message
    assert choice.finish_reason == OUTCOMES[name].finish_reason
    assert message.content == upstream.text  # "" when only tools were called (the role chunk's)
    assert (message.model_extra or {}).get("reasoning_content") == upstream.reasoning
    calls = [
        {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
        for call in message.tool_calls or []
    ]
    assert calls == upstream.calls
    assert upstream.usage is not None
    usage = state.current_completion_snapshot.usage
    assert usage is not None
    assert usage.model_dump(mode="json", exclude_none=True) == chat_usage(upstream.usage)


@pytest.mark.parametrize("name", FAILED)
def test_sdk_stream_raises_the_error_frame_after_the_streamed_text(name: str) -> None:
    run = run_stream(name)
    upstream = upstream_turn(stream_events(name))
    outcome = OUTCOMES[name]
    error_frames = [frame for frame in run.frames if isinstance(frame, dict) and "error" in frame]
    assert len(error_frames) == 1 and run.frames[-2:] == [error_frames[0], DONE]
    state = ChatCompletionStreamState()
    with openai_client(200, run.raw, "text/event-stream") as client:
        stream = client.chat.completions.create(**chat_body(name))
        with pytest.raises(openai.APIError) as caught:
            accumulate(stream, state)
    error = caught.value
    assert (error.code, error.type) == (outcome.error_code, outcome.error_type)
    assert error.message == error_frames[0]["error"]["message"]
    # The client keeps the text it got before the failure, and no finish_reason.
    snapshot = state.current_completion_snapshot.choices[0]
    assert snapshot.message.content == upstream.text
    assert snapshot.finish_reason is None


@pytest.mark.parametrize("name", STREAMS)
def test_without_include_usage_only_the_usage_fields_go(name: str) -> None:
    with_usage = run_stream(name).frames
    without_usage = run_stream(name, include_usage=False).frames

    def strip(frame: Any) -> Any:  # the id is random per stream
        if not isinstance(frame, dict):
            return frame
        return {key: value for key, value in frame.items() if key not in ("usage", "id")}

    usage_chunk = {"choices": [], "object": "chat.completion.chunk", "created": CREATED, "model": MODEL}
    expected = [strip(frame) for frame in with_usage if strip(frame) != usage_chunk]
    assert [strip(frame) for frame in without_usage] == expected
    assert all("usage" not in frame for frame in without_usage if isinstance(frame, dict))


def test_xlat_2_parallel_tool_calls_keep_the_upstream_call_ids_and_order() -> None:
    run = run_stream("parallel_function_calls")
    announced = [
        (call["index"], call["id"], call["function"]["name"])
        for chunk in run.chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls", [])
        if "id" in call
    ]
    assert announced == [(0, "call_45bddf0ca85731a6", "shell"), (1, "call_5e1f0a7d2b9c4e61", "read_file")]


def test_events_after_the_terminal_event_are_ignored() -> None:
    events = stream_events("plain_text")
    frames = ChatOverResponses().new_stream(chat_body("plain_text"), model=MODEL, created=CREATED)
    for event in events:
        frames.feed(event)
    assert frames.finished
    assert frames.feed(events[-1]) == b""
    assert frames.feed(events[4]) == b""  # a late text delta
    assert frames.trailer("upstream_timeout") == b"data: [DONE]\n\n"


def test_trailer_of_a_cut_stream_carries_the_gateway_error_code() -> None:
    frames = ChatOverResponses().new_stream(chat_body("cut_before_terminal"), model=MODEL, created=CREATED)
    for event in stream_events("cut_before_terminal"):
        frames.feed(event)
    assert not frames.finished
    trailer = decode_frames(frames.trailer("upstream_timeout"))
    assert trailer[-1] == DONE
    assert trailer[0] == {
        "error": {
            "message": "The upstream stream ended before the response was complete.",
            "type": "server_error",
            "param": None,
            "code": "upstream_timeout",
        }
    }


def test_trailer_after_an_error_frame_is_only_done() -> None:
    frames = ChatOverResponses().new_stream(chat_body("failed_mid_stream"), model=MODEL, created=CREATED)
    out = b"".join(frames.feed(event) for event in stream_events("failed_mid_stream"))
    assert frames.finished and b'"error"' in out
    assert frames.trailer("upstream_stream_error") == b"data: [DONE]\n\n"


# --- non-streaming answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", COMPLETED)
def test_answer_is_an_sdk_chat_completion(name: str) -> None:
    answer = answer_of(name)
    assert answer is not None
    parsed = ChatCompletion.model_validate(answer)
    assert parsed.model_dump(mode="json", exclude_unset=True) == answer
    body = {key: value for key, value in chat_body(name).items() if key not in ("stream", "stream_options")}
    content = json.dumps(answer).encode()
    with openai_client(200, content, "application/json", _strict_response_validation=True) as client:
        completion = client.chat.completions.create(**body)
    assert completion.model_dump(mode="json", exclude_unset=True) == answer


def calls_of(tool_calls: Iterable[Any] | None) -> list[tuple[str, str, str, str]]:
    return [(c.id, c.type, c.function.name, c.function.arguments) for c in tool_calls or []]


@pytest.mark.parametrize("name", COMPLETED)
def test_answer_agrees_with_the_accumulated_stream(name: str) -> None:
    state = ChatCompletionStreamState()
    for chunk in run_stream(name).chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    streamed = state.current_completion_snapshot
    answer = ChatCompletion.model_validate(answer_of(name))
    s_choice, a_choice = streamed.choices[0], answer.choices[0]
    assert s_choice.finish_reason == a_choice.finish_reason
    assert (s_choice.message.content or None) == a_choice.message.content
    assert s_choice.message.model_extra == a_choice.message.model_extra  # reasoning_content
    assert calls_of(s_choice.message.tool_calls) == calls_of(a_choice.message.tool_calls)
    assert streamed.usage == answer.usage


@pytest.mark.parametrize("name", COMPLETED)
def test_answer_holds_what_upstream_sent(name: str) -> None:
    answer = answer_of(name)
    upstream = upstream_turn(stream_events(name))
    assert answer is not None and upstream.usage is not None
    choice = answer["choices"][0]
    assert choice["finish_reason"] == OUTCOMES[name].finish_reason
    assert choice["message"]["content"] == (upstream.text or None)
    assert choice["message"].get("reasoning_content") == upstream.reasoning
    calls = [{"id": c["id"], **c["function"]} for c in choice["message"].get("tool_calls", [])]
    assert calls == upstream.calls
    assert answer["usage"] == chat_usage(upstream.usage)


def test_a_failed_response_has_no_completion() -> None:
    final = collected("failed_mid_stream")
    assert final is not None and final["status"] == "failed"
    with pytest.raises(ValueError, match="failed"):
        ChatOverResponses().answer(final, model=MODEL, created=CREATED)


@pytest.mark.parametrize("name", ["error_event_mid_stream", "cut_before_terminal"])
def test_no_terminal_response_means_nothing_to_answer(name: str) -> None:
    assert collected(name) is None
