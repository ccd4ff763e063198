"""Chat Completions as an upstream protocol (PAID-1): every client protocol reaches an
OpenAI-compatible server through the hub; its chunks become Responses events in OpenAI's order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from sublane_core import Dialect, WireProtocol
from sublane_protocols import TranslationRefused, translator_for, upstream_side
from sublane_protocols.chat import ChatClientSide, ChatEventsToResponses, ChatUpstreamSide, chat_request

EVENT = TypeAdapter(ResponseStreamEvent)
CHAT_REQUEST = TypeAdapter(CompletionCreateParamsStreaming)
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice], **extra}


USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 100},
    "completion_tokens_details": {"reasoning_tokens": 12},
}


def feed_all(events: ChatEventsToResponses, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [event for payload in chunks for event in events.feed(payload)]
    out += events.at_end()
    for event in out:
        EVENT.validate_python(event)  # every event is one the openai SDK knows
    return out


def test_paid_1_chat_upstream_side_is_registered() -> None:
    assert isinstance(upstream_side(WireProtocol.CHAT_COMPLETIONS), ChatUpstreamSide)


def test_paid_1_responses_request_becomes_a_chat_request() -> None:
    body = {
        "model": "qwen3-coder",
        "instructions": "You are a coder.",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Be brief."}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is here?"},
                    {
                        "type": "input_image",
                        "image_url": "data:image/png;base64,iVBORw0KGgo=",
                        "detail": "low",
                    },
                ],
            },
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Looking."}],
            },
            {"type": "function_call", "call_id": "call_a", "name": "read", "arguments": '{"path":"a"}'},
            {"type": "custom_tool_call", "call_id": "call_b", "name": "apply_patch", "input": "*** Begin"},
            {"type": "function_call_output", "call_id": "call_a", "output": "file a"},
            {
                "type": "custom_tool_call_output",
                "call_id": "call_b",
                "output": [
                    {"type": "input_text", "text": "patched"},
                    {"type": "input_image", "image_url": "https://example.test/shot.png"},
                ],
            },
            {"type": "message", "role": "user", "content": "thanks"},
        ],
        "tools": [
            {"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": True},
            {
                "type": "custom",
                "name": "apply_patch",
                "description": "Patch files.",
                "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
            },
        ],
        "tool_choice": {"type": "function", "name": "read"},
        "parallel_tool_calls": False,
        "max_output_tokens": 500,
        "temperature": 0.2,
        "top_p": 0.9,
        "reasoning": {"effort": "high", "summary": "auto"},
        "text": {
            "format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True}
        },
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "abc",
    }
    request = chat_request(body)
    CHAT_REQUEST.validate_python(request)  # a body the openai SDK would send itself
    assert request["messages"] == [
        {"role": "system", "content": "You are a coder.\n\nBe brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is here?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "apply_patch", "arguments": '{"input": "*** Begin"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "file a"},
        {"role": "tool", "tool_call_id": "call_b", "content": "patched"},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://example.test/shot.png"}}],
        },
        {"role": "user", "content": "thanks"},
    ]
    read, patch = request["tools"]
    assert read == {
        "type": "function",
        "function": {"name": "read", "parameters": {"type": "object"}, "strict": True},
    }
    assert patch["function"]["parameters"]["required"] == ["input"]
    assert "lark grammar" in patch["function"]["description"]
    assert request["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    assert request["parallel_tool_calls"] is False
    assert request["max_tokens"] == 500
    assert (request["temperature"], request["top_p"]) == (0.2, 0.9)
    assert request["reasoning_effort"] == "high"
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
    }
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    for dropped in ("store", "include", "prompt_cache_key", "reasoning", "text", "max_output_tokens"):
        assert dropped not in request


def test_paid_1_system_prelude_leads_once_and_json_calls_ask_no_usage_option() -> None:
    side = ChatUpstreamSide()
    body = {"model": "m", "instructions": "Prelude. Then rules.", "input": "hi", "stream": False}
    request = side.request_from_responses(body, system_prelude="Prelude.")
    assert request["messages"][0] == {"role": "system", "content": "Prelude.\n\nThen rules."}
    assert request["stream"] is False and "stream_options" not in request
    bare = side.request_from_responses({"model": "m", "input": "hi"}, system_prelude="Prelude.")
    assert bare["messages"] == [{"role": "system", "content": "Prelude."}, {"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"tools": [{"type": "web_search"}]}, "tools"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0]"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "input[0].content[0].file_id",
        ),
        ({"input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]}, "input[0].call_id"),
    ],
)
def test_paid_1_what_a_chat_server_cannot_take_is_refused(body: dict[str, Any], param: str) -> None:
    with pytest.raises(TranslationRefused) as refused:
        chat_request({"model": "m", "input": "hi", **body})
    assert refused.value.param == param


def test_paid_1_stream_with_reasoning_text_and_parallel_tool_calls_in_openai_order() -> None:
    request = {"tools": [{"type": "function", "name": "read"}, {"type": "custom", "name": "apply_patch"}]}
    events = ChatEventsToResponses(request, model="qwen3", created_at=7)
    chunks = [
        chunk({"role": "assistant", "reasoning_content": "Let me "}),
        chunk({"reasoning_content": "think."}),
        chunk({"content": "Reading"}),
        chunk({"content": " both."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_r",
                        "type": "function",
                        "function": {"name": "read", "arguments": ""},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_p",
                        "type": "function",
                        "function": {"name": "apply_patch", "arguments": '{"input":'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": '"a"}'}},
                    {"index": 1, "function": {"arguments": ' "*** Begin"}'}},
                ]
            }
        ),
        chunk({}, "tool_calls"),
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": USAGE},
    ]
    out = feed_all(events, chunks)
    kinds = [event["type"] for event in out]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed" and kinds.count("response.completed") == 1
    assert [event["sequence_number"] for event in out] == list(range(len(out)))
    added = [event["item"]["type"] for event in out if event["type"] == "response.output_item.added"]
    assert added == ["reasoning", "message", "function_call", "custom_tool_call"]
    done = [event["item"] for event in out if event["type"] == "response.output_item.done"]
    reasoning, message, call, custom = done
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Let me think."}]
    assert message["content"][0]["text"] == "Reading both."
    assert (call["call_id"], call["name"], call["arguments"]) == ("call_r", "read", '{"path":"a"}')
    assert (custom["call_id"], custom["name"], custom["input"]) == ("call_p", "apply_patch", "*** Begin")
    final = Response.model_validate(out[-1]["response"])
    assert final.id == "resp_chatcmpl-1"
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens) == (120, 30, 150)
    assert final.usage.input_tokens_details.cached_tokens == 100
    assert final.usage.output_tokens_details.reasoning_tokens == 12
    assert len(final.output) == 4


def test_paid_1_usage_only_chunk_after_the_finish_is_in_the_terminal_event() -> None:
    events = ChatEventsToResponses({}, model="m")
    finish = events.feed(chunk({"content": "hi"}, "stop"))
    assert not any(event["type"] in TERMINAL for event in finish)  # waits for the usage chunk
    last = events.feed({"id": "chatcmpl-1", "choices": [], "usage": USAGE})
    assert last[-1]["type"] == "response.completed"
    assert last[-1]["response"]["usage"]["input_tokens"] == 120


def test_paid_1_finish_chunk_with_usage_ends_at_once_and_stream_end_flushes_without_usage() -> None:
    events = ChatEventsToResponses({}, model="m")
    out = events.feed(chunk({"content": "hi"}, "stop", usage=USAGE))
    assert out[-1]["type"] == "response.completed"
    silent = ChatEventsToResponses({}, model="m")
    silent.feed(chunk({"content": "hi"}, "stop"))
    ended = silent.at_end()  # a server that ignored stream_options: [DONE] came next
    assert ended[-1]["type"] == "response.completed"
    assert "usage" not in ended[-1]["response"]
    cut = ChatEventsToResponses({}, model="m")
    cut.feed(chunk({"content": "hi"}))
    assert cut.at_end() == []  # never finished: the stream was cut, not whole


def test_paid_1_length_is_incomplete_and_an_error_object_fails() -> None:
    events = ChatEventsToResponses({}, model="m")
    out = feed_all(events, [chunk({"content": "long"}, "length"), {"choices": [], "usage": USAGE}])
    assert out[-1]["type"] == "response.incomplete"
    assert out[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    failing = ChatEventsToResponses({}, model="m")
    failed = feed_all(failing, [chunk({"content": "a"}), {"error": {"message": "engine died", "code": 500}}])
    assert failed[-1]["type"] == "response.failed"
    assert failed[-1]["response"]["error"]["message"] == "engine died"


def test_paid_1_json_answer_becomes_a_responses_response() -> None:
    answer = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-9",
            "object": "chat.completion",
            "created": 1,
            "model": "qwen3",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Calling.",
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                }
            ],
            "usage": USAGE,
        }
    ).model_dump(exclude_none=True)
    answer["choices"][0]["message"]["reasoning_content"] = "Hmm."  # vLLM's extension field
    final = ChatUpstreamSide().answer_to_responses(answer, model="qwen3", request={})
    response = Response.model_validate(final)
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
    assert response.usage is not None and response.usage.input_tokens == 120


@pytest.mark.parametrize("client", [WireProtocol.RESPONSES, WireProtocol.MESSAGES, WireProtocol.GEMINI])
def test_paid_1_every_client_protocol_gets_a_whole_answer_from_chat_chunks(client: WireProtocol) -> None:
    translator = translator_for(client, WireProtocol.CHAT_COMPLETIONS)
    assert translator is not None
    bodies: dict[WireProtocol, dict[str, Any]] = {
        WireProtocol.RESPONSES: {"model": "m", "input": "hi", "stream": True},
        WireProtocol.MESSAGES: {
            "model": "m",
            "max_tokens": 50,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        },
        WireProtocol.GEMINI: {"model": "m", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    }
    body = bodies[client]
    _hub, request = translator.translate(body, Dialect(required=(("stream", True),)))
    assert request["messages"][-1] == {"role": "user", "content": "hi"}
    stream = translator.new_stream(body, model="m", created=1)
    frames = stream.feed(chunk({"role": "assistant", "content": "Hello"})) + stream.feed(chunk({}, "stop"))
    frames += stream.trailer(None)  # [DONE] came without a usage chunk: the end is written now
    assert stream.finished
    text = frames.decode()
    assert "Hello" in text
    assert "error" not in text
    collector = translator.new_collector(body, model="m")
    collector.feed(chunk({"content": "Hello"}, "stop"))
    result = collector.result()
    assert result is not None and result["status"] == "completed"
    assert json.dumps(result).count("Hello") == 1


def test_paid_1_a_chat_body_survives_the_round_trip_through_the_hub() -> None:
    """Chat → Responses (the Chat client side) → Chat (the upstream side) keeps the conversation."""
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": '{"a":1}'}},
                {"id": "call_2", "type": "function", "function": {"name": "look", "arguments": '{"a":2}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
        {"role": "tool", "tool_call_id": "call_2", "content": "a hat"},
        {"role": "user", "content": "Thanks"},
    ]
    body = {
        "model": "m",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}],
        "tool_choice": "required",
        "max_tokens": 64,
        "temperature": 0.5,
        "stop": ["END"],
        "response_format": {"type": "json_object"},
        "stream": True,
    }
    hub = ChatClientSide().request_to_responses(body)
    back = chat_request(hub)
    assert back["messages"] == messages
    assert back["tools"] == body["tools"] and back["tool_choice"] == "required"
    assert (back["max_tokens"], back["temperature"], back["stop"]) == (64, 0.5, ["END"])
    assert back["response_format"] == {"type": "json_object"}


def test_paid_1_turns_alternate_as_chat_templates_want() -> None:
    body = {
        "model": "m",
        "instructions": "Rules.",
        "input": [
            {"role": "developer", "content": "Sandbox: read-only."},
            {"role": "user", "content": "go"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it."}]},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": " Listing."}],
            },
            {"type": "function_call_output", "call_id": "c1", "output": "a b"},
            {"role": "developer", "content": "Mind the time."},
        ],
    }
    assert chat_request(body, system_prelude="Prelude.")["messages"] == [
        {"role": "system", "content": "Prelude.\n\nRules.\n\nSandbox: read-only."},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "On it. Listing.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a b"},
        {"role": "system", "content": "Mind the time."},
    ]


def test_paid_1_whole_tool_calls_without_an_index_stay_apart() -> None:
    events = ChatEventsToResponses({}, model="m")
    whole = [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"n":1}'}},
        {"id": "call_b", "type": "function", "function": {"name": "f", "arguments": '{"n":2}'}},
    ]
    out = feed_all(events, [chunk({"tool_calls": whole[:1]}), chunk({"tool_calls": whole[1:]}, "tool_calls")])
    calls = [event["item"] for event in out if event["type"] == "response.output_item.done"]
    assert [(call["call_id"], call["arguments"]) for call in calls] == [
        ("call_a", '{"n":1}'),
        ("call_b", '{"n":2}'),
    ]
