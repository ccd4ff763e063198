"""The Messages sides of the hub: ``MessagesUpstreamSide`` (a Responses call on a Claude account) and
``MessagesClientSide`` (a Claude Code / ``anthropic`` SDK client served through the hub).

What the sides emit is checked by the official SDKs, not only against expectations written here:
the hub events an upstream side makes are validated as ``openai`` ``ResponseStreamEvent``s and read
by ``OpenAI().responses.stream(...)``; the frames and answers the client side makes are read by
``Anthropic().messages.stream(...)`` / ``.create(...)`` (``httpx2.MockTransport``) and validated as
``RawMessageStreamEvent`` / ``Message``.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.responses import Response, ResponseStreamEvent
from protocol_fixtures import STREAMS, real_client_requests, stream_events
from pydantic import TypeAdapter

from sublane_core import Dialect
from sublane_protocols import ResponsesCollector, TranslationRefused
from sublane_protocols._hub import HubTranslator
from sublane_protocols.chat._over_responses import ChatClientSide
from sublane_protocols.messages import MessagesClientSide, MessagesUpstreamSide
from sublane_protocols.responses._client_side import ResponsesClientSide, ResponsesFrames

MODEL = "claude-opus-4-8"
CREATED = 1_796_115_600
#: A line an upstream's dialect requires first in ``system`` (the one real Claude OAuth tokens need).
IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
WITH_IDENTITY = Dialect(system_prelude=IDENTITY)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK"
UPSTREAM = MessagesUpstreamSide(clock=lambda: CREATED)
CLIENT = MessagesClientSide()
_HUB_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
_CLAUDE_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)

SHELL = {
    "type": "function",
    "name": "shell",
    "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    "strict": True,
}
READ_FILE = {
    "type": "function",
    "name": "read_file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
APPLY_PATCH: dict[str, Any] = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/'},
}


# --- helpers --------------------------------------------------------------------------------------------


def hub(**fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": "hi", **fields}


def to_claude(**fields: Any) -> dict[str, Any]:
    return UPSTREAM.request_from_responses(hub(**fields), system_prelude=IDENTITY)


def refusal(translate: Callable[[dict[str, Any]], Any], body: dict[str, Any]) -> TranslationRefused:
    with pytest.raises(TranslationRefused) as caught:
        translate(body)
    return caught.value


def user(content: Any) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": content}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output(call_id: str, value: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": value}


def claude(**fields: Any) -> dict[str, Any]:
    """A Messages client body."""
    return {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}], **fields}


# Claude stream events, as the Messages API sends them.


def message_start(message_id: str = "msg_01TEST", **usage: int) -> dict[str, Any]:
    counts = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    counts.update(usage)
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": counts,
    }
    return {"type": "message_start", "message": message}


def text_block(index: int, *chunks: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}}
            for chunk in chunks
        ),
        {"type": "content_block_stop", "index": index},
    ]


def thinking_block(index: int, *chunks: str) -> list[dict[str, Any]]:
    start = {"type": "thinking", "thinking": "", "signature": ""}
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "thinking_delta", "thinking": c},
            }
            for c in chunks
        ),
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "signature_delta", "signature": "EqQB"},
        },
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(index: int, tool_id: str, name: str, *fragments: str) -> list[dict[str, Any]]:
    start = {"type": "tool_use", "id": tool_id, "name": name, "input": {}}
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": f},
            }
            for f in fragments
        ),
        {"type": "content_block_stop", "index": index},
    ]


def message_end(stop_reason: str, output_tokens: int = 42, **usage: int) -> list[dict[str, Any]]:
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}}
    return [{**delta, "usage": {"output_tokens": output_tokens, **usage}}, {"type": "message_stop"}]


TEXT_STREAM = [message_start(), {"type": "ping"}, *text_block(0, "Hello", " world"), *message_end("end_turn")]
THINKING_STREAM = [
    message_start(),
    *thinking_block(0, "Let me ", "think."),
    *text_block(1, "Done."),
    *message_end("end_turn"),
]
PARALLEL_TOOLS_STREAM = [
    message_start(),
    *text_block(0, "Two calls."),
    *tool_block(1, "toolu_01A", "shell", '{"cmd": ', '"ls"}'),
    *tool_block(2, "toolu_01B", "read_file", '{"path":', ' "README.md"}'),
    *message_end("tool_use"),
]


def hub_events(
    payloads: Iterable[Mapping[str, Any]], request: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    events = UPSTREAM.new_events(request if request is not None else hub(), model=MODEL)
    return [event for payload in payloads for event in events.feed(payload)]


def numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as a Responses client gets them (``sequence_number`` added by the hub frames)."""
    frames = ResponsesFrames()
    out = [frames.event(event) for event in events]
    return [event for event in out if event is not None]


def terminal(events: list[dict[str, Any]]) -> dict[str, Any]:
    last = events[-1]
    assert last["type"] in ("response.completed", "response.incomplete", "response.failed")
    return last


def openai_final_response(events: list[dict[str, Any]]) -> Response:
    """The events served as SSE to the ``openai`` SDK, read with ``responses.stream``."""
    frames = ResponsesFrames()
    content = b"".join(frames.feed(event) for event in events)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)

    client = openai.OpenAI(
        api_key="sl_test",
        base_url="http://sublane.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with client, client.responses.stream(model=MODEL, input="hi") as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def anthropic_client(content: bytes, content_type: str = "text/event-stream") -> anthropic.Anthropic:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": content_type}, content=content)

    return anthropic.Anthropic(
        api_key="sl_test",
        base_url="http://sublane.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )


def client_frames(events: Iterable[Mapping[str, Any]], *, trailer: str | None = None) -> bytes:
    frames = CLIENT.new_frames(claude(), model=MODEL, created=CREATED)
    out = b"".join(frames.feed(event) for event in events)
    return out + frames.trailer(trailer)


def decode_sse(data: bytes) -> list[dict[str, Any]]:
    """``event: <type>\\ndata: <json>\\n\\n`` frames → payloads (the event name checked against the type)."""
    payloads = []
    for block in data.decode().split("\n\n")[:-1]:
        event_line, data_line = block.split("\n")
        payload = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {payload['type']}"
        payloads.append(payload)
    return payloads


def sdk_final_message(content: bytes) -> tuple[list[str], Message]:
    """The text the SDK streams and the message it accumulates from our frames."""
    with anthropic_client(content) as client, client.messages.stream(**claude()) as stream:
        texts = list(stream.text_stream)
        return texts, stream.get_final_message()


# --- upstream side: requests ----------------------------------------------------------------------------


def test_system_text_is_led_by_exactly_the_dialects_prelude() -> None:
    request = to_claude(
        instructions="Be brief.",
        input=[
            {"type": "message", "role": "developer", "content": "Use tools."},
            user("hi"),
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Late rule."}]},
        ],
    )
    assert request["system"] == [text(IDENTITY), text("Be brief."), text("Use tools."), text("Late rule.")]
    assert request["messages"] == [{"role": "user", "content": [text("hi")]}]
    assert "stream" not in request  # the adapter adds it


def test_the_prelude_is_not_duplicated_when_the_system_text_starts_with_it() -> None:
    assert to_claude(instructions=IDENTITY)["system"] == [text(IDENTITY)]
    request = to_claude(instructions=f"{IDENTITY}\n\nYou help with code.")
    assert request["system"] == [text(IDENTITY), text("You help with code.")]
    assert to_claude()["system"] == [text(IDENTITY)]


def test_an_upstream_without_a_prelude_gets_the_system_texts_alone() -> None:
    request = UPSTREAM.request_from_responses(hub(instructions="Be brief."))
    assert request["system"] == [text("Be brief.")]
    assert "system" not in UPSTREAM.request_from_responses(hub())


def test_multi_turn_history_alternates_and_merges_same_role_turns() -> None:
    request = to_claude(
        input=[
            user("one"),
            user([{"type": "input_text", "text": "two"}]),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "three"}]},
            {"role": "assistant", "content": "four"},  # an EasyInputMessage without "type"
            user("five"),
        ]
    )
    assert request["messages"] == [
        {"role": "user", "content": [text("one"), text("two")]},
        {"role": "assistant", "content": [text("three"), text("four")]},
        {"role": "user", "content": [text("five")]},
    ]


def test_xlat_2_parallel_calls_are_one_assistant_turn_and_their_results_one_user_turn() -> None:
    request = to_claude(
        tools=[SHELL, READ_FILE],
        input=[
            user("look"),
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "x"}],
                "encrypted_content": "gAAA",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Two calls."}],
            },
            call("call_A", "shell", '{"cmd": "ls"}'),
            call("call_B", "read_file", '{"path": "README.md"}'),
            output("call_A", "a.txt"),
            user("and also"),
            output("call_B", [{"type": "input_text", "text": "# Readme"}]),
        ],
    )
    assert request["messages"] == [
        {"role": "user", "content": [text("look")]},
        {
            "role": "assistant",
            "content": [
                text("Two calls."),
                {"type": "tool_use", "id": "call_A", "name": "shell", "input": {"cmd": "ls"}},
                {"type": "tool_use", "id": "call_B", "name": "read_file", "input": {"path": "README.md"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_A", "content": "a.txt"},
                {"type": "tool_result", "tool_use_id": "call_B", "content": [text("# Readme")]},
                text("and also"),
            ],
        },
    ]


def test_empty_arguments_are_an_empty_input() -> None:
    request = to_claude(tools=[SHELL], input=[user("go"), call("c1", "shell", ""), output("c1", "")])
    assert request["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "shell", "input": {}}
    ]


@pytest.mark.parametrize("arguments", ['{"cmd": "ls"', "[1, 2]", "nope"])
def test_unparsable_arguments_are_refused_naming_the_item(arguments: str) -> None:
    body = hub(tools=[SHELL], input=[user("go"), call("c1", "shell", arguments), output("c1", "x")])
    error = refusal(UPSTREAM.request_from_responses, body)
    assert error.code == "invalid_request"
    assert error.param == "input[1].arguments"
    assert "input[1]" in error.message


def test_images_and_pdfs_become_claude_blocks() -> None:
    request = to_claude(
        input=[
            user(
                [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "high"},
                    {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
                    {
                        "type": "input_file",
                        "file_data": f"data:application/pdf;base64,{PDF}",
                        "filename": "a.pdf",
                    },
                ]
            )
        ]
    )
    assert request["messages"][0]["content"] == [
        text("What is this?"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "a.pdf",
        },
    ]


def test_tool_output_with_an_image_is_a_tool_result_with_blocks() -> None:
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}
    request = to_claude(
        tools=[SHELL],
        input=[
            user("shot"),
            call("c1", "shell", "{}"),
            output("c1", [{"type": "input_text", "text": "ok"}, image]),
        ],
    )
    assert request["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [
                text("ok"),
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("part", "param"),
    [
        ({"type": "input_image", "image_url": "data:image/bmp;base64,Qk0="}, "input[0].content[0].image_url"),
        ({"type": "input_image", "file_id": "file_1"}, "input[0].content[0].file_id"),
        ({"type": "input_file", "file_data": "data:text/csv;base64,YSxi"}, "input[0].content[0].file_data"),
        ({"type": "input_file", "file_id": "file_1"}, "input[0].content[0].file_id"),
        ({"type": "input_audio", "input_audio": {}}, "input[0].content[0].type"),
    ],
)
def test_xlat_3_media_claude_cannot_read_are_refused(part: dict[str, Any], param: str) -> None:
    error = refusal(UPSTREAM.request_from_responses, hub(input=[user([part])]))
    assert (error.code, error.param) == ("unsupported_for_provider", param)


def test_custom_tool_round_trip_through_a_string_input_property() -> None:
    request = to_claude(
        tools=[APPLY_PATCH, SHELL],
        input=[
            user("patch it"),
            {
                "type": "custom_tool_call",
                "call_id": "call_P",
                "name": "apply_patch",
                "input": "*** Begin Patch\n",
            },
            {"type": "custom_tool_call_output", "call_id": "call_P", "output": "Done!"},
        ],
    )
    tools: list[dict[str, Any]] = request["tools"]
    tool = tools[0]
    assert tool["name"] == "apply_patch" and tool["description"] == "Apply a patch."
    schema = tool["input_schema"]
    assert schema["type"] == "object" and schema["required"] == ["input"]
    assert schema["properties"]["input"]["type"] == "string"
    assert "lark" in schema["properties"]["input"]["description"]
    assert APPLY_PATCH["format"]["definition"] in schema["properties"]["input"]["description"]
    assert tools[1] == {
        "name": "shell",
        "description": "Run a shell command.",
        "input_schema": SHELL["parameters"],  # "strict" dropped
    }
    assert request["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_P",
                    "name": "apply_patch",
                    "input": {"input": "*** Begin Patch\n"},
                }
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_P", "content": "Done!"}]},
    ]


def test_function_tool_without_parameters_gets_an_empty_object_schema() -> None:
    request = to_claude(tools=[{"type": "function", "name": "now"}])
    assert request["tools"] == [{"name": "now", "input_schema": {"type": "object", "properties": {}}}]


def test_max_tokens_default_and_explicit() -> None:
    assert to_claude()["max_tokens"] == 32000
    assert to_claude(max_output_tokens=500)["max_tokens"] == 500


def test_sampling_and_stop_sequences() -> None:
    request = to_claude(temperature=0.3, stop=["END", "STOP"])
    assert (request["temperature"], request["stop_sequences"]) == (0.3, ["END", "STOP"])
    assert "top_p" not in request
    assert to_claude(top_p=0.9)["top_p"] == 0.9
    assert to_claude(temperature=0.5, top_p=0.9) == {**to_claude(temperature=0.5)}  # newer models refuse both
    assert to_claude(temperature=1.7)["temperature"] == 1.0  # Claude's range is 0..1
    assert to_claude(stop="END")["stop_sequences"] == ["END"]
    assert "stop_sequences" not in to_claude(stop=[])


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"type": "function", "name": "shell"}, {"type": "tool", "name": "shell"}),
        ({"type": "custom", "name": "apply_patch"}, {"type": "tool", "name": "apply_patch"}),
    ],
)
def test_tool_choice_mapping(choice: Any, expected: dict[str, Any]) -> None:
    assert to_claude(tools=[SHELL, APPLY_PATCH], tool_choice=choice)["tool_choice"] == expected


def test_parallel_tool_calls_false_disables_parallel_tool_use_only_with_tools() -> None:
    assert to_claude(tools=[SHELL], parallel_tool_calls=False)["tool_choice"] == {
        "type": "auto",
        "disable_parallel_tool_use": True,
    }
    assert to_claude(tools=[SHELL], tool_choice="required", parallel_tool_calls=False)["tool_choice"] == {
        "type": "any",
        "disable_parallel_tool_use": True,
    }
    assert to_claude(tools=[SHELL], tool_choice="none", parallel_tool_calls=False)["tool_choice"] == {
        "type": "none"
    }
    assert "tool_choice" not in to_claude(tools=[SHELL], parallel_tool_calls=True)
    without_tools = to_claude(tool_choice="auto", parallel_tool_calls=False)
    assert "tool_choice" not in without_tools and "tools" not in without_tools


@pytest.mark.parametrize(
    ("effort", "budget"),
    [("minimal", 1024), ("low", 4096), ("medium", 8192), ("high", 16384), ("xhigh", 24576)],
)
def test_reasoning_effort_becomes_a_thinking_budget(effort: str, budget: int) -> None:
    request = to_claude(reasoning={"effort": effort, "summary": "auto"})
    assert request["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert request["max_tokens"] == 32000 > budget


def test_no_thinking_without_reasoning_or_with_effort_none() -> None:
    assert "thinking" not in to_claude(reasoning={"effort": "none"})
    assert "thinking" not in to_claude()
    # Codex CLI sends only {"summary": "auto"}: the Responses default effort, medium.
    assert to_claude(reasoning={"summary": "auto"})["thinking"] == {"type": "enabled", "budget_tokens": 8192}


def test_thinking_drops_temperature_and_top_p() -> None:
    request = to_claude(reasoning={"effort": "low"}, temperature=0.2, top_p=0.5)
    assert "temperature" not in request and "top_p" not in request
    assert request["thinking"]["type"] == "enabled"


def test_thinking_budget_stays_below_max_tokens() -> None:
    request = to_claude(reasoning={"effort": "high"}, max_output_tokens=2000)
    assert request["thinking"]["budget_tokens"] == 16384
    assert request["max_tokens"] == 16384 + 2000
    assert to_claude(reasoning={"effort": "low"}, max_output_tokens=8000)["max_tokens"] == 8000


def test_thinking_is_off_when_the_last_assistant_turn_called_tools() -> None:
    history = [user("go"), call("c1", "shell", '{"cmd": "ls"}'), output("c1", "a.txt")]
    request = to_claude(tools=[SHELL], reasoning={"effort": "high"}, temperature=0.2, input=history)
    assert "thinking" not in request
    assert request["temperature"] == 0.2
    # An earlier tool turn, followed by a plain assistant answer, does not matter.
    later = [*history, {"role": "assistant", "content": "Done."}, user("thanks")]
    assert (
        to_claude(tools=[SHELL], reasoning={"effort": "high"}, input=later)["thinking"]["budget_tokens"]
        == 16384
    )


def test_thinking_is_off_when_a_tool_is_forced() -> None:
    assert "thinking" not in to_claude(tools=[SHELL], tool_choice="required", reasoning={"effort": "high"})
    assert "thinking" in to_claude(tools=[SHELL], tool_choice="auto", reasoning={"effort": "high"})


def test_harmless_fields_are_dropped() -> None:
    request = to_claude(
        text={"verbosity": "low"},
        store=False,
        stream=True,
        include=["reasoning.encrypted_content"],
        prompt_cache_key="thread-1",
        metadata={"a": "b"},
        service_tier="auto",
        truncation="auto",
        user="u",
        safety_identifier="s",
        client_metadata={"x": "y"},
        stream_options={"include_obfuscation": False},
        prompt_cache_retention="24h",
    )
    assert request == to_claude()
    assert to_claude(text={"format": {"type": "text"}}) == to_claude()


def test_xlat_3_structured_output_is_carried_as_claude_output_config() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    fmt = {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}
    request = to_claude(text={"format": fmt})
    assert request["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert {key: value for key, value in request.items() if key != "output_config"} == to_claude()


def test_xlat_3_json_mode_without_a_schema_is_refused_not_dropped() -> None:
    with pytest.raises(TranslationRefused) as refused:
        to_claude(text={"format": {"type": "json_object"}})
    assert (refused.value.code, refused.value.param) == ("unsupported_for_provider", "text.format")
    with pytest.raises(TranslationRefused) as bad:
        to_claude(text={"format": {"type": "json_schema", "name": "x"}})  # no schema
    assert (bad.value.code, bad.value.param) == ("invalid_request", "text.format.schema")


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt"),
        ({"background": True}, "background"),
        ({"tools": [SHELL, {"type": "web_search"}]}, "tools[1]"),
        ({"tools": [{"type": "file_search", "vector_store_ids": []}]}, "tools[0]"),
        ({"tools": [{"type": "code_interpreter"}]}, "tools[0]"),
        ({"tools": [{"type": "image_generation"}]}, "tools[0]"),
        ({"tools": [{"type": "mcp", "server_label": "x"}]}, "tools[0]"),
        ({"tools": [{"type": "local_shell"}]}, "tools[0]"),
        (
            {"tools": [SHELL], "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}},
            "tool_choice",
        ),
        ({"input": [{"type": "compaction", "encrypted_content": "gAAA"}, user("hi")]}, "input[0]"),
        ({"input": [user("hi"), {"type": "compaction_summary", "encrypted_content": "gAAA"}]}, "input[1]"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
        (
            {"input": [user("hi"), {"type": "web_search_call", "id": "ws_1", "status": "completed"}]},
            "input[1]",
        ),
    ],
)
def test_xlat_3_refused_for_messages(fields: dict[str, Any], param: str) -> None:
    error = refusal(UPSTREAM.request_from_responses, hub(**fields))
    assert (error.code, error.param) == ("unsupported_for_provider", param)


def test_xlat_3_previous_response_id_refused_for_messages() -> None:
    error = refusal(UPSTREAM.request_from_responses, hub(previous_response_id="resp_abc"))
    assert (error.code, error.param) == ("unsupported_for_provider", "previous_response_id")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "hi"}, "model"),
        (hub(input=42), "input"),
        (hub(input=[]), "input"),
        (hub(input=[{"type": "message", "role": "tool", "content": "x"}]), "input[0].role"),
        (hub(input=[{"type": "bogus"}]), "input[0].type"),
        (hub(input=[user([{"type": "input_text"}])]), "input[0].content[0].text"),
        (hub(instructions=["a"]), "instructions"),
        (hub(max_output_tokens=0), "max_output_tokens"),
        (hub(temperature="hot"), "temperature"),
        (hub(reasoning={"effort": "extreme"}), "reasoning.effort"),
        (hub(tools=[{"type": "function"}]), "tools[0].name"),
        (hub(tools=[SHELL], tool_choice="sometimes"), "tool_choice"),
        (hub(tool_choice="required"), "tool_choice"),
        (hub(stop=[1]), "stop[0]"),
        (
            hub(input=[user([{"type": "input_image", "image_url": "ftp://x"}])]),
            "input[0].content[0].image_url",
        ),
    ],
)
def test_malformed_hub_bodies_are_refused_with_the_param(body: dict[str, Any], param: str) -> None:
    error = refusal(UPSTREAM.request_from_responses, body)
    assert (error.code, error.param) == ("invalid_request", param)


def test_count_tokens_body_has_only_what_is_counted() -> None:
    body = hub(tools=[SHELL], instructions="Be brief.", max_output_tokens=10, temperature=0.1, stream=True)
    counted = UPSTREAM.count_request_from_responses(body, system_prelude=IDENTITY)
    assert set(counted) == {"model", "system", "messages", "tools"}
    assert counted["system"][0] == text(IDENTITY)
    assert UPSTREAM.counted_tokens({"input_tokens": 1234}) == 1234
    with pytest.raises(ValueError, match="input_tokens"):
        UPSTREAM.counted_tokens({})


# --- upstream side: events ------------------------------------------------------------------------------


def test_text_stream_is_a_responses_event_sequence() -> None:
    events = hub_events(TEXT_STREAM)
    assert [event["type"] for event in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    for event in numbered(events):
        _HUB_EVENT.validate_python(event)
    created = events[0]["response"]
    assert (created["id"], created["model"], created["created_at"]) == ("resp_01TEST", MODEL, CREATED)
    done = terminal(events)["response"]
    assert done["status"] == "completed"
    assert done["output"] == [
        {
            "type": "message",
            "id": "msg_01TEST_0",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello world", "annotations": []}],
        }
    ]


@pytest.mark.parametrize(
    ("stream", "request_fields"),
    [
        (TEXT_STREAM, {}),
        (THINKING_STREAM, {"reasoning": {"effort": "low"}}),
        (PARALLEL_TOOLS_STREAM, {"tools": [SHELL, READ_FILE]}),
    ],
)
def test_openai_sdk_reads_the_hub_events(
    stream: list[dict[str, Any]], request_fields: dict[str, Any]
) -> None:
    events = hub_events(stream, hub(**request_fields))
    for event in numbered(events):
        _HUB_EVENT.validate_python(event)
    response = openai_final_response(events)
    expected = Response.model_validate(terminal(events)["response"])
    assert response.id == expected.id and response.status == "completed"
    assert [item.model_dump(exclude_none=True) for item in response.output] == [
        item.model_dump(exclude_none=True) for item in expected.output
    ]
    assert response.usage == expected.usage


def test_thinking_becomes_a_reasoning_summary_and_signatures_are_dropped() -> None:
    events = hub_events(THINKING_STREAM)
    kinds = [event["type"] for event in events]
    assert kinds[2:8] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ]
    output = terminal(events)["response"]["output"]
    assert output[0] == {
        "type": "reasoning",
        "id": "rs_01TEST_0",
        "summary": [{"type": "summary_text", "text": "Let me think."}],
    }
    assert output[1]["content"][0]["text"] == "Done."
    assert "EqQB" not in json.dumps(events)  # XLAT-2
    assert all("encrypted_content" not in item for item in output)


def test_redacted_and_empty_thinking_leave_no_item() -> None:
    stream = [
        message_start(),
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "xyz"},
        },
        {"type": "content_block_stop", "index": 0},
        *thinking_block(1),
        *text_block(2, "Hi"),
        *message_end("end_turn"),
    ]
    events = hub_events(stream)
    output = terminal(events)["response"]["output"]
    assert [item["type"] for item in output] == ["message"]
    assert output[0]["id"] == "msg_01TEST_0"  # output indexes stay contiguous
    assert "xyz" not in json.dumps(events)


def test_xlat_2_parallel_tool_calls_keep_claude_ids_and_order() -> None:
    events = hub_events(PARALLEL_TOOLS_STREAM, hub(tools=[SHELL, READ_FILE]))
    calls = [item for item in terminal(events)["response"]["output"] if item["type"] == "function_call"]
    assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
        ("toolu_01A", "shell", '{"cmd": "ls"}'),
        ("toolu_01B", "read_file", '{"path": "README.md"}'),
    ]
    deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert deltas == ['{"cmd": ', '"ls"}', '{"path":', ' "README.md"}']
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.added"] == [0, 1, 2]


def test_tool_use_without_input_deltas_has_empty_object_arguments() -> None:
    events = hub_events([message_start(), *tool_block(0, "toolu_1", "now"), *message_end("tool_use")])
    deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert deltas == ["{}"]
    assert terminal(events)["response"]["output"][0]["arguments"] == "{}"


def test_custom_tool_use_comes_out_as_a_custom_tool_call() -> None:
    stream = [
        message_start(),
        *tool_block(0, "toolu_P", "apply_patch", '{"input": "*** Begin', ' Patch\\n"}'),
        *message_end("tool_use"),
    ]
    events = hub_events(stream, hub(tools=[APPLY_PATCH]))
    for event in numbered(events):
        _HUB_EVENT.validate_python(event)
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" not in kinds
    assert [e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta"] == [
        "*** Begin Patch\n"
    ]
    item = terminal(events)["response"]["output"][0]
    assert item == {
        "type": "custom_tool_call",
        "id": "ctc_01TEST_0",
        "call_id": "toolu_P",
        "name": "apply_patch",
        "input": "*** Begin Patch\n",
    }


def test_usage_counts_cache_reads_and_writes_as_input() -> None:
    stream = [
        message_start(
            input_tokens=100, cache_read_input_tokens=2000, cache_creation_input_tokens=300, output_tokens=1
        ),
        *text_block(0, "x"),
        *message_end("end_turn", output_tokens=77, output_tokens_details={"thinking_tokens": 20}),  # type: ignore[arg-type]
    ]
    usage = terminal(hub_events(stream))["response"]["usage"]
    assert usage == {
        "input_tokens": 2400,
        "input_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 300},
        "output_tokens": 77,
        "output_tokens_details": {"reasoning_tokens": 20},
        "total_tokens": 2477,
    }


@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [
        ("max_tokens", "max_output_tokens"),
        ("model_context_window_exceeded", "max_output_tokens"),
        ("refusal", "content_filter"),
    ],
)
def test_cut_off_answers_are_incomplete(stop_reason: str, reason: str) -> None:
    events = hub_events([message_start(), *text_block(0, "The ans"), *message_end(stop_reason)])
    last = terminal(events)
    assert last["type"] == "response.incomplete"
    assert last["response"]["status"] == "incomplete"
    assert last["response"]["incomplete_details"] == {"reason": reason}
    _HUB_EVENT.validate_python(numbered(events)[-1])


@pytest.mark.parametrize("stop_reason", ["end_turn", "stop_sequence", "tool_use"])
def test_other_stop_reasons_complete(stop_reason: str) -> None:
    assert terminal(hub_events([message_start(), *text_block(0, "x"), *message_end(stop_reason)]))[
        "type"
    ] == ("response.completed")


@pytest.mark.parametrize(
    ("error_type", "code"),
    [
        ("overloaded_error", "server_is_overloaded"),
        ("rate_limit_error", "rate_limit_exceeded"),
        ("api_error", "upstream_error"),
    ],
)
def test_error_event_fails_the_response(error_type: str, code: str) -> None:
    error = {"type": "error", "error": {"type": error_type, "message": "Overloaded"}}
    events = hub_events([message_start(), *text_block(0, "Hel"), error, *text_block(1, "late")])
    last = terminal(events)
    assert last["type"] == "response.failed"
    assert last["response"]["error"] == {"code": code, "message": "Overloaded"}
    assert last["response"]["output"][0]["content"][0]["text"] == "Hel"
    # The SDK's error codes are a closed list that lags the Codex backend's own (server_is_overloaded).
    shape = copy.deepcopy(numbered(events)[-1])
    shape["response"]["error"]["code"] = "server_error"
    _HUB_EVENT.validate_python(shape)


def test_error_before_message_start_still_opens_the_response() -> None:
    events = hub_events([{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}])
    assert [e["type"] for e in events] == ["response.created", "response.in_progress", "response.failed"]


def test_events_after_the_terminal_are_ignored() -> None:
    translator = UPSTREAM.new_events(hub(), model=MODEL)
    for payload in TEXT_STREAM:
        translator.feed(payload)
    assert translator.feed(TEXT_STREAM[2]) == []
    assert translator.feed({"type": "error", "error": {"type": "api_error"}}) == []


def test_json_answer_to_responses() -> None:
    answer = {
        "id": "msg_01JSON",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [
            {"type": "thinking", "thinking": "Hmm.", "signature": "EqQB"},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"cmd": "ls"}},
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "apply_patch",
                "input": {"input": "*** Begin Patch"},
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 5,
            "cache_read_input_tokens": 10,
            "cache_creation_input_tokens": 0,
            "output_tokens": 9,
        },
    }
    response = UPSTREAM.answer_to_responses(answer, model=MODEL, request=hub(tools=[SHELL, APPLY_PATCH]))
    Response.model_validate(response)
    assert (response["id"], response["status"]) == ("resp_01JSON", "completed")
    assert [item["type"] for item in response["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "custom_tool_call",
    ]
    assert response["output"][2]["arguments"] == '{"cmd":"ls"}'
    assert response["output"][3]["input"] == "*** Begin Patch"
    assert (
        response["usage"]["input_tokens"] == 15
        and response["usage"]["input_tokens_details"]["cached_tokens"] == 10
    )
    assert "EqQB" not in json.dumps(response)


def test_json_answer_cut_at_max_tokens_and_error_answer() -> None:
    answer = {
        "id": "msg_01CUT",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "The"}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    response = UPSTREAM.answer_to_responses(answer, model=MODEL, request=hub())
    assert response["status"] == "incomplete" and response["incomplete_details"] == {
        "reason": "max_output_tokens"
    }
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    failed = UPSTREAM.answer_to_responses(error, model=MODEL, request=hub())
    assert failed["status"] == "failed" and failed["error"]["code"] == "server_is_overloaded"


# --- client side: requests ---------------------------------------------------------------------------------


def test_system_becomes_a_leading_developer_message() -> None:
    body = claude(
        system=[
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197; cc_entrypoint=cli;"},
            {"type": "text", "text": IDENTITY, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        ]
    )
    request = CLIENT.request_to_responses(body)
    assert request["input"][0] == {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": IDENTITY}, {"type": "input_text", "text": "Be brief."}],
    }
    assert "instructions" not in request
    assert "cache_control" not in json.dumps(request)
    assert CLIENT.request_to_responses(claude(system="Plain."))["input"][0]["content"] == [
        {"type": "input_text", "text": "Plain."}
    ]


def test_messages_become_hub_items() -> None:
    body = claude(
        tools=[
            {"name": "shell", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}
        ],
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look", "cache_control": {"type": "ephemeral"}},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                    },
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Hmm", "signature": "EqQB"},
                    {"type": "redacted_thinking", "data": "xyz"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"cmd": "ls"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "shell", "input": {"cmd": "pwd"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "/home"}, {"type": "text", "text": "ok"}],
                    },
                    {"type": "text", "text": "Go on."},
                ],
            },
        ],
    )
    items = CLIENT.request_to_responses(body)["input"]
    assert items == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
                {
                    "type": "input_file",
                    "file_data": f"data:application/pdf;base64,{PDF}",
                    "filename": "document.pdf",
                },
                {"type": "input_text", "text": "notes"},
            ],
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "function_call", "call_id": "toolu_1", "name": "shell", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call", "call_id": "toolu_2", "name": "shell", "arguments": '{"cmd":"pwd"}'},
        {"type": "function_call_output", "call_id": "toolu_1", "output": "a.txt"},
        {"type": "function_call_output", "call_id": "toolu_2", "output": "/home\nok"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go on."}]},
    ]
    assert "EqQB" not in json.dumps(items) and "xyz" not in json.dumps(items)  # XLAT-2


def test_tool_results_with_images_and_errors() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    body = claude(
        tools=[{"name": "shot", "input_schema": {"type": "object"}}],
        messages=[
            {"role": "user", "content": "screenshot"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "shot", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "shot", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "here"}, image],
                    },
                    {"type": "tool_result", "tool_use_id": "t2", "content": "no display", "is_error": True},
                ],
            },
        ],
    )
    items = CLIENT.request_to_responses(body)["input"]
    assert items[3] == {
        "type": "function_call_output",
        "call_id": "t1",
        "output": [
            {"type": "input_text", "text": "here"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
        ],
    }
    assert items[4] == {"type": "function_call_output", "call_id": "t2", "output": "Error: no display"}


def test_tools_and_tool_choice() -> None:
    tools = [
        {
            "name": "shell",
            "description": "Run.",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "custom", "name": "read", "input_schema": {"type": "object"}, "strict": True},
    ]
    request = CLIENT.request_to_responses(
        claude(tools=tools, tool_choice={"type": "any", "disable_parallel_tool_use": True})
    )
    assert request["tools"] == [
        {
            "type": "function",
            "name": "shell",
            "description": "Run.",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
        {"type": "function", "name": "read", "parameters": {"type": "object"}, "strict": False},
    ]
    assert (request["tool_choice"], request["parallel_tool_calls"]) == ("required", False)
    for choice, expected in [
        ({"type": "auto"}, "auto"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "read"}, {"type": "function", "name": "read"}),
    ]:
        translated = CLIENT.request_to_responses(claude(tools=tools, tool_choice=choice))
        assert translated["tool_choice"] == expected and "parallel_tool_calls" not in translated
    assert "tool_choice" not in CLIENT.request_to_responses(claude(tool_choice={"type": "auto"}))


@pytest.mark.parametrize(
    "tool_type",
    [
        "web_search_20250305",
        "web_fetch_20250910",
        "bash_20250124",
        "text_editor_20250728",
        "computer_20250124",
        "code_execution_20250825",
        "memory_20250818",
        "tool_search_tool_regex_20251119",
    ],
)
def test_xlat_3_server_tools_refused_for_hub(tool_type: str) -> None:
    tools = [{"name": "shell", "input_schema": {"type": "object"}}, {"type": tool_type, "name": "server"}]
    error = refusal(CLIENT.request_to_responses, claude(tools=tools))
    assert (error.code, error.param) == ("unsupported_for_provider", "tools[1]")


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"container": "cntr_1"}, "container"),
        ({"mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "x"}]}, "mcp_servers"),
        (
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
                        ],
                    },
                ]
            },
            "messages[1].content[0]",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image", "source": {"type": "file", "file_id": "file_1"}}],
                    },
                ]
            },
            "messages[0].content[0].source",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}
                        ],
                    },
                ]
            },
            "messages[0].content[0].source",
        ),
    ],
)
def test_xlat_3_server_state_refused_for_hub(fields: dict[str, Any], param: str) -> None:
    error = refusal(CLIENT.request_to_responses, claude(**fields))
    assert (error.code, error.param) == ("unsupported_for_provider", param)


@pytest.mark.parametrize(
    ("thinking", "output_config", "expected"),
    [
        ({"type": "enabled", "budget_tokens": 2048}, None, {"effort": "low", "summary": "auto"}),
        ({"type": "enabled", "budget_tokens": 10000}, None, {"effort": "medium", "summary": "auto"}),
        ({"type": "enabled", "budget_tokens": 31999}, None, {"effort": "high", "summary": "auto"}),
        ({"type": "adaptive"}, {"effort": "low"}, {"effort": "low", "summary": "auto"}),
        ({"type": "adaptive"}, {"effort": "max"}, {"effort": "xhigh", "summary": "auto"}),
        ({"type": "adaptive"}, None, {"effort": "high", "summary": "auto"}),
        (None, {"effort": "medium"}, {"effort": "medium", "summary": "auto"}),
        ({"type": "disabled"}, {"effort": "high"}, None),
        (None, None, None),
    ],
)
def test_thinking_becomes_reasoning(thinking: Any, output_config: Any, expected: Any) -> None:
    fields = {
        key: value
        for key, value in (("thinking", thinking), ("output_config", output_config))
        if value is not None
    }
    assert CLIENT.request_to_responses(claude(**fields)).get("reasoning") == expected


def test_generation_options_and_dropped_fields() -> None:
    body = claude(
        max_tokens=64000,
        temperature=0.4,
        top_p=0.8,
        top_k=40,
        stop_sequences=["\n\nHuman:"],
        stream=True,
        metadata={
            "user_id": json.dumps({"device_id": "d", "session_id": "7c6c7643-f166-4fb5-8933-f9a2696e5690"})
        },
        context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        service_tier="auto",
        cache_control={"type": "ephemeral"},
        output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
    )
    request = CLIENT.request_to_responses(body)
    assert request == {
        "model": MODEL,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "max_output_tokens": 64000,
        "temperature": 0.4,
        "top_p": 0.8,
        "stop": ["\n\nHuman:"],
        "stream": True,
        "prompt_cache_key": "7c6c7643-f166-4fb5-8933-f9a2696e5690",
        "text": {
            "format": {"type": "json_schema", "name": "output", "schema": {"type": "object"}, "strict": True}
        },
    }


def test_real_claude_code_request_translates() -> None:
    capture = real_client_requests()["claude_code_2.1.197"]
    body = copy.deepcopy(next(request["body"] for request in capture if request.get("body")))
    body.update(
        system=[{"type": "text", "text": IDENTITY, "cache_control": {"type": "ephemeral"}}],
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        tools=[{"name": "Bash", "description": "Run.", "input_schema": {"type": "object", "properties": {}}}],
    )
    request = CLIENT.request_to_responses(body)
    assert request["model"] == "claude-opus-4-8"
    assert request["reasoning"] == {"effort": "high", "summary": "auto"}
    assert request["max_output_tokens"] == 64000 and request["stream"] is True
    assert request["prompt_cache_key"] == "7c6c7643-f166-4fb5-8933-f9a2696e5690"
    assert "context_management" not in request and "metadata" not in request


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
        (claude(messages=[]), "messages"),
        (claude(messages="hi"), "messages"),
        (claude(messages=[{"role": "tool", "content": "x"}]), "messages[0].role"),
        (claude(messages=[{"role": "user", "content": [{"type": "text"}]}]), "messages[0].content[0].text"),
        (
            claude(
                messages=[
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}],
                    }
                ]
            ),
            "messages[0].content[0].tool_use_id",
        ),
        (
            claude(
                messages=[
                    {"role": "user", "content": "hi"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
                    },
                ]
            ),
            "messages[1].content[0].id",
        ),
        (claude(system=[{"type": "image"}]), "system[0].type"),
        (claude(max_tokens=-1), "max_tokens"),
        (claude(temperature="warm"), "temperature"),
        (claude(stop_sequences=[3]), "stop_sequences[0]"),
        (claude(thinking={"type": "enabled"}), "thinking.budget_tokens"),
        (claude(thinking={"type": "sometimes"}), "thinking.type"),
        (claude(output_config={"effort": "huge"}), "output_config.effort"),
        (claude(tools=[{"name": "x"}]), "tools[0].input_schema"),
        (
            claude(tools=[{"name": "x", "input_schema": {}}], tool_choice={"type": "tool", "name": "y"}),
            "tool_choice.name",
        ),
        (claude(tool_choice={"type": "any"}), "tool_choice"),
        (claude(stream="yes"), "stream"),
    ],
)
def test_malformed_messages_bodies_are_refused_with_the_param(body: dict[str, Any], param: str) -> None:
    error = refusal(CLIENT.request_to_responses, body)
    assert (error.code, error.param) == ("invalid_request", param)


RICH_HUB_BODY = hub(
    instructions="Be brief.",
    tools=[SHELL, READ_FILE, APPLY_PATCH],
    tool_choice="auto",
    parallel_tool_calls=False,
    reasoning={"effort": "high", "summary": "auto"},
    max_output_tokens=4000,
    temperature=0.5,
    stop=["END"],
    text={"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}},
    input=[
        {"type": "message", "role": "developer", "content": "Use tools."},
        user(
            [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
                {
                    "type": "input_file",
                    "file_data": f"data:application/pdf;base64,{PDF}",
                    "filename": "a.pdf",
                },
            ]
        ),
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "x"}]},
        call("c1", "shell", '{"cmd": "ls"}'),
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin"},
        output("c1", [{"type": "input_text", "text": "a"}]),
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
    ],
)
RICH_CLAUDE_BODY = claude(
    system=[{"type": "text", "text": "You help.", "cache_control": {"type": "ephemeral"}}],
    tools=[{"name": "shell", "input_schema": {"type": "object", "properties": {}}}],
    tool_choice={"type": "auto", "disable_parallel_tool_use": True},
    thinking={"type": "enabled", "budget_tokens": 2048},
    output_config={"effort": "low", "format": {"type": "json_schema", "schema": {"type": "object"}}},
    temperature=0.2,
    stop_sequences=["END"],
    stream=True,
    metadata={"user_id": "user_x_session_7c6c7643-f166-4fb5-8933-f9a2696e5690"},
    messages=[
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Hmm", "signature": "EqQB"},
                {"type": "tool_use", "id": "t1", "name": "shell", "input": {"cmd": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "a"}],
                    "is_error": True,
                },
            ],
        },
    ],
)
_ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    3.5,
    "",
    "x",
    "text",
    "image",
    [],
    [None],
    {},
    {"type": None},
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            paths.extend(_paths(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            paths.extend(_paths(inner, (*prefix, index)))
    return paths


def _mutated(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``body`` with one to three nested values replaced by odd ones (or removed)."""
    body = copy.deepcopy(body)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(body))
        parent: Any = body
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(_ODD_VALUES))
        if not _paths(body):
            break
    return body


def _outcome(translate: Callable[[dict[str, Any]], Any], body: dict[str, Any]) -> str:
    """``"translated"``, or the code of the refusal (any other exception fails the test)."""
    try:
        translate(body)
    except TranslationRefused as error:
        return error.code
    return "translated"


@pytest.mark.parametrize("side", ["client", "upstream"])
def test_a_mutated_body_is_translated_or_refused_never_another_error(side: str) -> None:
    rng = random.Random(20261201)
    seed = RICH_CLAUDE_BODY if side == "client" else RICH_HUB_BODY
    translate = CLIENT.request_to_responses if side == "client" else UPSTREAM.request_from_responses
    translate(seed)  # the seed itself is valid
    for _ in range(800):
        body = _mutated(seed, rng)
        assert _outcome(translate, body) in ("translated", "invalid_request", "unsupported_for_provider")


def test_mutated_streams_and_answers_never_raise() -> None:
    """Odd upstream events or answers make odd output, never an exception in the relay."""
    rng = random.Random(20261202)
    claude_streams = [TEXT_STREAM, THINKING_STREAM, PARALLEL_TOOLS_STREAM]
    hub_streams = [stream_events(name) for name in STREAMS]
    response = terminal(hub_events(PARALLEL_TOOLS_STREAM))["response"]
    for _ in range(400):
        claude_stream = _mutated({"s": rng.choice(claude_streams)}, rng).get("s")
        events = UPSTREAM.new_events(hub(tools=[APPLY_PATCH]), model=MODEL)
        for payload in claude_stream if isinstance(claude_stream, list) else []:
            if isinstance(payload, dict):
                events.feed(payload)
        hub_stream = _mutated({"s": rng.choice(hub_streams)}, rng).get("s")
        frames = CLIENT.new_frames(claude(), model=MODEL, created=CREATED)
        for payload in hub_stream if isinstance(hub_stream, list) else []:
            if isinstance(payload, dict):
                frames.feed(payload)
        frames.trailer(None)
        answer = _mutated({"type": "message", "content": [{"type": "text", "text": "x"}], "usage": {}}, rng)
        UPSTREAM.answer_to_responses(answer, model=MODEL, request=hub())
        final = _mutated(response, rng)
        if final.get("status") in ("completed", "incomplete"):
            CLIENT.answer_from_responses(final, model=MODEL, created=CREATED)


# --- client side: streams, through the anthropic SDK ----------------------------------------------------


def _sdk_events(content: bytes) -> list[Any]:
    with anthropic_client(content) as client:
        return list(client.messages.create(**claude(), stream=True))


@pytest.mark.parametrize("name", STREAMS)
def test_every_frame_is_an_anthropic_stream_event_with_contiguous_blocks(name: str) -> None:
    payloads = decode_sse(client_frames(stream_events(name)))
    open_blocks: list[int] = []
    seen: list[int] = []
    for payload in payloads:
        if payload["type"] == "error":
            assert payload is payloads[-1]
            continue
        parsed = _CLAUDE_EVENT.validate_python(payload)
        assert parsed.model_dump(mode="json", exclude_unset=True) == payload
        if payload["type"] == "content_block_start":
            assert not open_blocks, "one block at a time"
            assert payload["index"] == len(seen)
            seen.append(payload["index"])
            open_blocks.append(payload["index"])
        elif payload["type"] == "content_block_delta":
            assert open_blocks == [payload["index"]]
        elif payload["type"] == "content_block_stop":
            assert open_blocks == [payload["index"]]
            open_blocks.clear()
    assert payloads[0]["type"] == "message_start" or payloads[0]["type"] == "error"
    assert payloads[-1]["type"] in ("message_stop", "error")


def test_sdk_reads_a_text_stream() -> None:
    texts, message = sdk_final_message(client_frames(stream_events("plain_text")))
    assert "".join(texts) == "Hello! How can I help you today?"
    assert message.model == MODEL and message.id.startswith("msg_")
    assert [block.type for block in message.content] == ["text"]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 1200 - 1024
    assert message.usage.cache_read_input_tokens == 1024
    assert message.usage.output_tokens == 4


def test_sdk_reads_thinking_without_a_signature() -> None:
    payloads = decode_sse(client_frames(stream_events("reasoning_summary_text")))
    assert not any(p.get("delta", {}).get("type") == "signature_delta" for p in payloads)
    _, message = sdk_final_message(client_frames(stream_events("reasoning_summary_text")))
    thinking, answer = message.content
    assert thinking.type == "thinking" and thinking.signature == ""
    assert (
        thinking.thinking
        == "Clients deterministic accounts\n\n**Checking the files**\n\nBoth need reading first."
    )
    assert answer.type == "text" and answer.text == "Both files look fine."


def test_xlat_2_sdk_reads_two_parallel_tool_uses_with_the_upstream_ids() -> None:
    _, message = sdk_final_message(client_frames(stream_events("parallel_function_calls")))
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [
        ("call_45bddf0ca85731a6", "shell", {"cmd": "sim"}),
        ("call_5e1f0a7d2b9c4e61", "read_file", {"path": "README.md"}),
    ]
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens == 3000 - 2944 and message.usage.cache_read_input_tokens == 2944


def test_sdk_reads_an_incomplete_answer_as_max_tokens() -> None:
    _, message = sdk_final_message(client_frames(stream_events("incomplete_max_tokens")))
    assert message.stop_reason == "max_tokens"


@pytest.mark.parametrize(
    ("name", "error_type", "code"),
    [
        ("failed_mid_stream", "overloaded_error", "server_is_overloaded"),
        ("error_event_mid_stream", "rate_limit_error", "rate_limit_exceeded"),
    ],
)
def test_sdk_raises_the_upstream_failure_after_the_streamed_text(
    name: str, error_type: str, code: str
) -> None:
    content = client_frames(stream_events(name))
    assert decode_sse(content)[-1]["type"] == "error"
    texts: list[str] = []
    with (
        anthropic_client(content) as client,
        pytest.raises(anthropic.APIStatusError) as caught,
        client.messages.stream(**claude()) as stream,
    ):
        texts.extend(stream.text_stream)
    assert "".join(texts).startswith("Worki")
    body = caught.value.body
    assert isinstance(body, dict) and body["error"]["type"] == error_type and body["error"]["code"] == code


def test_stream_cut_mid_way_ends_with_an_error_frame() -> None:
    frames = CLIENT.new_frames(claude(), model=MODEL, created=CREATED)
    for event in stream_events("cut_before_terminal"):
        frames.feed(event)
    assert not frames.finished
    trailer = decode_sse(frames.trailer("upstream_timeout"))
    assert trailer == [
        {
            "type": "error",
            "error": {
                "type": "api_error",
                "message": "The upstream stream ended before the response was complete.",
                "code": "upstream_timeout",
            },
        }
    ]
    assert frames.trailer(None) == b""
    assert bool(frames.finished)  # narrowed to False above: the trailer finished it
    with (
        anthropic_client(client_frames(stream_events("cut_before_terminal"))) as client,
        pytest.raises(anthropic.APIStatusError),
    ):
        list(client.messages.create(**claude(), stream=True))


def test_trailer_after_a_finished_stream_is_empty() -> None:
    frames = CLIENT.new_frames(claude(), model=MODEL, created=CREATED)
    for event in stream_events("plain_text"):
        frames.feed(event)
    assert frames.finished and frames.trailer("upstream_timeout") == b""
    assert frames.feed(stream_events("plain_text")[4]) == b""


def test_custom_tool_call_streams_as_a_tool_use_with_an_input_string() -> None:
    item = {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_P",
        "name": "apply_patch",
        "input": "",
    }
    done = {**item, "input": '*** Begin Patch\n"quoted"'}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.custom_tool_call_input.delta",
            "item_id": "ctc_1",
            "output_index": 0,
            "delta": "*** Begin",
        },
        {
            "type": "response.custom_tool_call_input.delta",
            "item_id": "ctc_1",
            "output_index": 0,
            "delta": ' Patch\n"quoted"',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [done]}},
    ]
    _, message = sdk_final_message(client_frames(events))
    (use,) = message.content
    assert (
        use.type == "tool_use" and use.id == "call_P" and use.input == {"input": '*** Begin Patch\n"quoted"'}
    )
    assert message.stop_reason == "tool_use"


def test_done_items_fill_in_what_the_deltas_did_not_carry() -> None:
    message_item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Only at the end.", "annotations": []}],
    }
    call_item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "shell",
        "arguments": '{"cmd":"ls"}',
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.done", "output_index": 0, "item": message_item},
        {"type": "response.output_item.done", "output_index": 1, "item": call_item},
        {
            "type": "response.completed",
            "response": {"id": "resp_1", "status": "completed", "output": [message_item, call_item]},
        },
    ]
    _, message = sdk_final_message(client_frames(events))
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Only at the end."  # type: ignore[union-attr]
    assert message.content[1].input == {"cmd": "ls"}  # type: ignore[union-attr]


def test_empty_parts_and_summaries_make_no_block() -> None:
    message_item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [],
    }
    part = {"type": "output_text", "text": "", "annotations": []}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {
            "type": "response.reasoning_summary_part.added",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": 0,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": message_item},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "part": part,
        },
        {
            "type": "response.content_part.done",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "part": part,
        },
        {"type": "response.output_item.done", "output_index": 1, "item": {**message_item, "content": [part]}},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}},
    ]
    kinds = [payload["type"] for payload in decode_sse(client_frames(events))]
    assert kinds == ["message_start", "message_delta", "message_stop"]


def test_usage_arithmetic_on_the_way_out() -> None:
    usage = {
        "input_tokens": 5000,
        "input_tokens_details": {"cached_tokens": 4000, "cache_write_tokens": 600},
        "output_tokens": 70,
        "output_tokens_details": {"reasoning_tokens": 20},
        "total_tokens": 5070,
    }
    final = {"id": "resp_1", "status": "completed", "output": [], "usage": usage}
    answer = CLIENT.answer_from_responses(final, model=MODEL, created=CREATED)
    assert answer["usage"] == {
        "input_tokens": 400,
        "cache_creation_input_tokens": 600,
        "cache_read_input_tokens": 4000,
        "output_tokens": 70,
    }
    events = [{"type": "response.completed", "response": final}]
    delta = next(p for p in decode_sse(client_frames(events)) if p["type"] == "message_delta")
    assert delta["usage"] == answer["usage"]


# --- client side: JSON answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [n for n in STREAMS if n not in ("failed_mid_stream", "error_event_mid_stream", "cut_before_terminal")],
)
def test_json_answer_is_an_sdk_message(name: str) -> None:
    collector = ResponsesCollector()
    for event in stream_events(name):
        collector.feed(event)
    final = collector.result()
    assert final is not None
    answer = CLIENT.answer_from_responses(final, model=MODEL, created=CREATED)
    parsed = Message.model_validate(answer)
    assert parsed.model_dump(mode="json", exclude_unset=True) == answer
    with anthropic_client(json.dumps(answer).encode(), "application/json") as client:
        message = client.messages.create(**claude())
    assert message.model_dump(mode="json", exclude_unset=True) == answer
    _, streamed = sdk_final_message(client_frames(stream_events(name)))
    assert [b.model_dump(exclude={"citations"}) for b in streamed.content] == [
        b.model_dump(exclude={"citations"}) for b in message.content
    ]
    assert (streamed.stop_reason, streamed.usage) == (message.stop_reason, message.usage)


def test_json_answer_of_tool_calls_and_odd_arguments() -> None:
    final = {
        "id": "resp_abc",
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "shell",
                "arguments": '{"cmd":"ls"}',
            },
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "now", "arguments": ""},
            {
                "type": "function_call",
                "id": "fc_3",
                "call_id": "call_3",
                "name": "odd",
                "arguments": "not json",
            },
            {
                "type": "custom_tool_call",
                "id": "ctc_4",
                "call_id": "call_4",
                "name": "apply_patch",
                "input": "*** Begin",
            },
        ],
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    answer = CLIENT.answer_from_responses(final, model=MODEL, created=CREATED)
    assert answer["id"] == "msg_abc" and answer["stop_reason"] == "tool_use"
    assert [(b["id"], b["input"]) for b in answer["content"]] == [
        ("call_1", {"cmd": "ls"}),
        ("call_2", {}),
        ("call_3", {"input": "not json"}),
        ("call_4", {"input": "*** Begin"}),
    ]
    incomplete = {
        **final,
        "status": "incomplete",
        "incomplete_details": {"reason": "content_filter"},
        "output": [],
    }
    assert CLIENT.answer_from_responses(incomplete, model=MODEL, created=CREATED)["stop_reason"] == "refusal"
    with pytest.raises(ValueError, match="failed"):
        CLIENT.answer_from_responses({"status": "failed"}, model=MODEL, created=CREATED)
    assert CLIENT.count_answer(321) == {"input_tokens": 321}


# --- round trips ----------------------------------------------------------------------------------------


def test_messages_to_hub_to_messages_keeps_text_tool_ids_and_images() -> None:
    original = claude(
        system="You help.",
        tools=[
            {
                "name": "shell",
                "description": "Run.",
                "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
            }
        ],
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in the picture? Then list files."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "A dot. Listing."},
                    {"type": "tool_use", "id": "toolu_01X", "name": "shell", "input": {"cmd": "ls"}},
                    {"type": "tool_use", "id": "toolu_01Y", "name": "shell", "input": {"cmd": "ls -a"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01X", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "toolu_01Y", "content": ".\n..\na.txt"},
                ],
            },
        ],
    )
    back = UPSTREAM.request_from_responses(CLIENT.request_to_responses(original), system_prelude=IDENTITY)
    assert back["messages"] == [
        {"role": message["role"], "content": message["content"]} for message in original["messages"]
    ]
    assert back["system"] == [text(IDENTITY), text("You help.")]
    assert back["tools"] == original["tools"]
    assert back["max_tokens"] == original["max_tokens"]


def test_claude_stream_through_the_hub_to_a_messages_client_keeps_the_answer() -> None:
    """Upstream side then client side: what the SDK accumulates is what Claude sent (signature aside)."""
    request = CLIENT.request_to_responses(
        claude(tools=[{"name": "shell", "input_schema": {"type": "object"}}])
    )
    events = UPSTREAM.new_events(request, model=MODEL)
    frames = CLIENT.new_frames(claude(), model=MODEL, created=CREATED)
    stream = [
        message_start(input_tokens=7, cache_read_input_tokens=100),
        *thinking_block(0, "Plan."),
        *text_block(1, "Calling ", "shell."),
        *tool_block(2, "toolu_01A", "shell", '{"cmd": "ls"}'),
        *tool_block(3, "toolu_01B", "shell", '{"cmd": "pwd"}'),
        *message_end("tool_use", output_tokens=30),
    ]
    content = b"".join(frames.feed(event) for payload in stream for event in events.feed(payload))
    content += frames.trailer(None)
    _, message = sdk_final_message(content)
    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        {"type": "thinking", "thinking": "Plan.", "signature": ""},
        {"type": "text", "text": "Calling shell."},
        {"type": "tool_use", "id": "toolu_01A", "name": "shell", "input": {"cmd": "ls"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "shell", "input": {"cmd": "pwd"}},
    ]
    assert message.stop_reason == "tool_use"
    assert (
        message.usage.input_tokens,
        message.usage.cache_read_input_tokens,
        message.usage.output_tokens,
    ) == (7, 100, 30)


# --- composed cells (the lead's matrix builds them the same way) ---------------------------------------


def _cell(client: Any) -> HubTranslator:
    return HubTranslator(client, UPSTREAM, ResponsesClientSide())


def test_responses_client_on_claude_cut_mid_way_gets_response_failed() -> None:
    cell = _cell(None)
    body = hub(stream=True)
    assert cell.request(body, WITH_IDENTITY)["system"] == [text(IDENTITY)]
    stream = cell.new_stream(body, model=MODEL, created=CREATED)
    content = b"".join(stream.feed(payload) for payload in [message_start(), *text_block(0, "Hal")[:2]])
    assert not stream.finished
    content += stream.trailer("upstream_timeout")
    events = [json.loads(block.split("\ndata: ")[1]) for block in content.decode().split("\n\n")[:-1]]
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "upstream_timeout"
    for event in events[:-1]:
        _HUB_EVENT.validate_python(event)


def test_chat_client_on_claude_reads_text_and_tool_calls_through_the_openai_sdk() -> None:
    cell = _cell(ChatClientSide())
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "shell", "parameters": SHELL["parameters"]}}],
        "stream": True,
    }
    request = cell.request(body, WITH_IDENTITY)
    assert request["system"] == [text(IDENTITY), text("Be brief.")]
    assert request["tools"][0]["name"] == "shell"
    stream = cell.new_stream(body, model=MODEL, created=CREATED)
    content = b"".join(stream.feed(payload) for payload in PARALLEL_TOOLS_STREAM) + stream.trailer(None)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)

    client = openai.OpenAI(
        api_key="sl_test",
        base_url="http://sublane.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    with client:
        chunks = list(client.chat.completions.create(**body))
    calls = [call for chunk in chunks for choice in chunk.choices for call in choice.delta.tool_calls or []]
    assert [(c.id, c.function.name) for c in calls if c.id] == [
        ("toolu_01A", "shell"),
        ("toolu_01B", "read_file"),
    ]
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == "Two calls."
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
