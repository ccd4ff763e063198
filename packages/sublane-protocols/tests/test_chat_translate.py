"""Chat Completions ⇄ Responses translation (`sublane_protocols.chat`).

Every produced chunk and completion is validated with the `openai` SDK's own pydantic types, and
every translated request against the SDK's Responses request types, so the shapes stay the ones
real clients and the real backend speak.
"""

from __future__ import annotations

import copy
import json
from typing import Any, get_args

import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageFunctionToolCall
from openai.types.responses import (
    FunctionToolParam,
    ResponseError,
    ResponseInputItemParam,
    ResponseStreamEvent,
)
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import TypeAdapter

from sublane_protocols.chat._translate import (
    ChatRequestError,
    ChatStreamTranslator,
    chat_to_responses,
    responses_to_chat_completion,
)

MODEL = "gpt-5-codex"
COMPLETION_ID = "chatcmpl-test"
CREATED = 1_760_000_000

_INPUT_ITEMS = TypeAdapter(list[ResponseInputItemParam])
_FUNCTION_TOOLS = TypeAdapter(list[FunctionToolParam])
_CREATE_PARAMS = TypeAdapter(ResponseCreateParamsStreaming)
_STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
_PUBLIC_ERROR_CODES = get_args(ResponseError.model_fields["code"].annotation)
_CREATE_KEYS = (
    ResponseCreateParamsStreaming.__required_keys__ | ResponseCreateParamsStreaming.__optional_keys__
)


def translate(**fields: Any) -> dict[str, Any]:
    """`chat_to_responses` on a minimal valid body updated with `fields`, checked against the SDK."""
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    body.update(fields)
    request = chat_to_responses(body)
    assert_valid_responses_request(request)
    return request


def assert_valid_responses_request(request: dict[str, Any]) -> None:
    assert set(request) <= _CREATE_KEYS, set(request) - _CREATE_KEYS
    # Iterable-typed fields are validated one by one: pydantic checks them only lazily.
    rest = {key: value for key, value in request.items() if key not in ("input", "tools")}
    _CREATE_PARAMS.validate_python(rest)
    _FUNCTION_TOOLS.validate_python(request.get("tools", []))
    # The SDK types an assistant message in input as a full output message (id, status,
    # annotations); Codex itself replays the short form, so those are checked by shape instead.
    others = [item for item in request["input"] if item.get("role") != "assistant"]
    _INPUT_ITEMS.validate_python(others)
    for item in request["input"]:
        if item.get("role") == "assistant":
            assert item["type"] == "message"
            assert all(set(part) == {"type", "text"} for part in item["content"])
            assert all(part["type"] == "output_text" for part in item["content"])


def refusal(**fields: Any) -> ChatRequestError:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    body.update(fields)
    with pytest.raises(ChatRequestError) as caught:
        chat_to_responses(body)
    return caught.value


def tool(name: str, **function: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, **function}}


def call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


# --------------------------------------------------------------------------------------------------
# Request translation
# --------------------------------------------------------------------------------------------------


def test_minimal_request_is_a_streamed_unstored_responses_request() -> None:
    request = translate()

    assert request == {
        "model": MODEL,
        "instructions": "",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "store": False,
        "stream": True,
    }


@pytest.mark.parametrize("stream", [True, False, None])
def test_store_and_stream_are_forced_whatever_the_client_asks(stream: bool | None) -> None:
    request = translate(stream=stream, store=True)

    assert request["store"] is False
    assert request["stream"] is True


def test_prompt_cache_key_is_left_to_the_gateway() -> None:
    request = translate(prompt_cache_key="thread-1", user="u-1")

    assert "prompt_cache_key" not in request


def test_leading_system_and_developer_messages_become_instructions() -> None:
    request = translate(
        messages=[
            {"role": "system", "content": "You are terse."},
            {
                "role": "developer",
                "content": [{"type": "text", "text": "Use"}, {"type": "text", "text": "tools."}],
            },
            {"role": "user", "content": "hi"},
        ]
    )

    assert request["instructions"] == "You are terse.\n\nUse\ntools."
    assert [item["role"] for item in request["input"]] == ["user"]


def test_later_system_messages_become_developer_items_in_place() -> None:
    request = translate(
        messages=[
            {"role": "system", "content": "first"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "mid-conversation note"},
            {"role": "user", "content": "again"},
        ]
    )

    assert request["instructions"] == "first"
    assert request["input"][1] == {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "mid-conversation note"}],
    }
    assert [item["role"] for item in request["input"]] == ["user", "developer", "user"]


def test_user_content_parts_become_input_text_and_input_image() -> None:
    request = translate(
        messages=[
            {
                "role": "user",
                "name": "alice",
                "content": [
                    {"type": "text", "text": "What is in these images?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "https://example.com/cat.png", "detail": "low"},
                    },
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    {"type": "image_url", "image_url": "https://example.com/bare.png"},
                ],
            }
        ]
    )

    assert request["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in these images?"},
                {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
                {"type": "input_image", "image_url": "https://example.com/bare.png", "detail": "auto"},
            ],
        }
    ]


def test_inline_file_parts_become_input_files() -> None:
    data = "data:application/pdf;base64,JVBERi0xLjQK"
    request = translate(
        messages=[
            {"role": "user", "content": [{"type": "file", "file": {"file_data": data, "filename": "a.pdf"}}]},
        ]
    )

    assert request["input"][0]["content"] == [{"type": "input_file", "file_data": data, "filename": "a.pdf"}]


def test_assistant_text_and_refusal_are_replayed_as_output_text() -> None:
    request = translate(
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "and?"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "A"}, {"type": "refusal", "refusal": "No."}],
            },
            {"role": "assistant", "content": None, "refusal": "I can't."},
            {"role": "user", "content": "ok"},
        ]
    )

    assistant = [item for item in request["input"] if item["role"] == "assistant"]
    assert assistant == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "A"}, {"type": "output_text", "text": "No."}],
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I can't."}]},
    ]


def test_assistant_tool_calls_become_function_call_items() -> None:
    request = translate(
        messages=[
            {"role": "user", "content": "weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    call("call_1", "get_weather", '{"city":"Paris"}'),
                    call("call_2", "get_weather", '{"city":"Rome"}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "rainy"},
        ],
        tools=[tool("get_weather", parameters=WEATHER_SCHEMA)],
    )

    assert request["input"][1:4] == [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking both."}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city":"Rome"}'},
    ]


def test_tool_messages_become_function_call_outputs() -> None:
    request = translate(
        messages=[
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": [call("call_9", "run")]},
            {
                "role": "tool",
                "tool_call_id": "call_9",
                "content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}],
            },
        ],
        tools=[tool("run")],
    )

    assert request["input"][1:] == [
        {"type": "function_call", "call_id": "call_9", "name": "run", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_9", "output": "line 1\nline 2"},
    ]


def test_multi_turn_tool_use_round_trip_keeps_order() -> None:
    request = translate(
        messages=[
            {"role": "system", "content": "Be helpful."},
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("call_a", "get_weather", '{"city":"Paris"}')],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": '{"temp": 21}'},
            {"role": "assistant", "content": "It is 21 °C in Paris."},
            {"role": "user", "content": "And Rome?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("call_b", "get_weather", '{"city":"Rome"}')],
            },
            {"role": "tool", "tool_call_id": "call_b", "content": '{"temp": 25}'},
        ],
        tools=[tool("get_weather", description="Current weather", parameters=WEATHER_SCHEMA, strict=True)],
        tool_choice="auto",
        parallel_tool_calls=True,
    )

    kinds = [(item["type"], item.get("role") or item.get("call_id")) for item in request["input"]]
    assert kinds == [
        ("message", "user"),
        ("function_call", "call_a"),
        ("function_call_output", "call_a"),
        ("message", "assistant"),
        ("message", "user"),
        ("function_call", "call_b"),
        ("function_call_output", "call_b"),
    ]
    assert request["instructions"] == "Be helpful."
    assert request["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather",
            "parameters": WEATHER_SCHEMA,
            "strict": True,
        }
    ]
    assert request["tool_choice"] == "auto"
    assert request["parallel_tool_calls"] is True


def test_function_tools_default_to_non_strict_like_chat() -> None:
    request = translate(tools=[tool("lookup", parameters=WEATHER_SCHEMA)])

    assert request["tools"] == [
        {"type": "function", "name": "lookup", "parameters": WEATHER_SCHEMA, "strict": False},
    ]


def test_tool_without_parameters_takes_no_arguments() -> None:
    request = translate(tools=[tool("now")])

    assert request["tools"][0]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "function", "function": {"name": "lookup"}}, {"type": "function", "name": "lookup"}),
    ],
)
def test_tool_choice_is_translated(choice: Any, expected: Any) -> None:
    request = translate(tools=[tool("lookup")], tool_choice=choice)

    assert request["tool_choice"] == expected


def test_tool_settings_are_dropped_without_tools() -> None:
    request = translate(tools=[], tool_choice="none", parallel_tool_calls=False)

    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(request)


def test_parallel_tool_calls_is_copied_with_tools() -> None:
    request = translate(tools=[tool("lookup")], parallel_tool_calls=False)

    assert request["parallel_tool_calls"] is False


@pytest.mark.parametrize("effort", ["minimal", "low", "medium", "high", "xhigh"])
def test_reasoning_effort_asks_for_summaries_and_encrypted_reasoning(effort: str) -> None:
    request = translate(reasoning_effort=effort)

    assert request["reasoning"] == {"effort": effort, "summary": "auto"}
    assert request["include"] == ["reasoning.encrypted_content"]


def test_reasoning_effort_none_requests_no_reasoning_content() -> None:
    request = translate(reasoning_effort="none")

    assert request["reasoning"] == {"effort": "none"}
    assert "include" not in request


def test_no_reasoning_effort_means_no_reasoning_fields() -> None:
    request = translate()

    assert "reasoning" not in request and "include" not in request


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        ({"type": "text"}, {"type": "text"}),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {
                "type": "json_schema",
                "json_schema": {
                    "name": "weather",
                    "description": "A report",
                    "schema": WEATHER_SCHEMA,
                    "strict": True,
                },
            },
            {
                "type": "json_schema",
                "name": "weather",
                "description": "A report",
                "schema": WEATHER_SCHEMA,
                "strict": True,
            },
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "loose", "schema": {"type": "object"}}},
            {"type": "json_schema", "name": "loose", "schema": {"type": "object"}},
        ),
    ],
)
def test_response_format_becomes_text_format(
    response_format: dict[str, Any], expected: dict[str, Any]
) -> None:
    request = translate(response_format=response_format)

    assert request["text"] == {"format": expected}


def test_verbosity_becomes_text_verbosity() -> None:
    request = translate(verbosity="low", response_format={"type": "text"})

    assert request["text"] == {"format": {"type": "text"}, "verbosity": "low"}


def test_xlat_2_sampling_the_output_cap_and_stop_sequences_go_into_the_hub() -> None:
    request = translate(temperature=0.2, top_p=0.9, max_tokens=100, max_completion_tokens=200)
    assert (request["temperature"], request["top_p"], request["max_output_tokens"]) == (0.2, 0.9, 200)
    assert translate(max_tokens=100)["max_output_tokens"] == 100
    assert not {"max_tokens", "max_completion_tokens"} & set(translate(max_tokens=100))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    # the hub's own `stop` (Responses has none; the Messages and Gemini sides read it, the
    # Responses upstream side drops it)
    assert chat_to_responses({**body, "stop": "END"})["stop"] == ["END"]
    assert chat_to_responses({**body, "stop": ["a", "b"]})["stop"] == ["a", "b"]


def test_harmless_fields_are_dropped() -> None:
    request = translate(
        user="u-1",
        metadata={"k": "v"},
        n=1,
        seed=7,
        logprobs=False,
        top_logprobs=0,
        stop=None,
        modalities=["text"],
        frequency_penalty=0.5,
        presence_penalty=0.1,
        logit_bias={"50256": -100},
        service_tier="auto",
        stream_options={"include_usage": True},
        prediction={"type": "content", "content": "x"},
        safety_identifier="s",
        prompt_cache_retention="24h",
        functions=[],
        x_vendor_extension={"anything": True},
    )

    assert set(request) == {"model", "instructions", "input", "store", "stream"}


def test_request_body_is_not_mutated() -> None:
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
            {"role": "assistant", "tool_calls": [call("c", "f")]},
            {"role": "tool", "tool_call_id": "c", "content": "r"},
        ],
        "tools": [tool("f", parameters={"type": "object"})],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "n", "schema": {"type": "object"}},
        },
    }
    before = copy.deepcopy(body)

    request = chat_to_responses(body)
    request["tools"][0]["parameters"]["mutated"] = True
    request["text"]["format"]["schema"]["mutated"] = True

    assert body == before


# --- refusals ---------------------------------------------------------------------------------------


def test_chat_request_error_is_a_value_error_with_a_client_facing_message() -> None:
    error = refusal(n=2)

    assert isinstance(error, ValueError)
    assert error.param == "n"
    assert str(error) == error.message
    assert error.message.endswith(".")


def test_non_object_body_is_refused_without_a_param() -> None:
    with pytest.raises(ChatRequestError) as caught:
        chat_to_responses([])  # type: ignore[arg-type]

    assert caught.value.param is None


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"model": ""}, "model"),
        ({"model": None}, "model"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": ["hi"]}, "messages[0]"),
        ({"messages": [{"content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": None}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": []}]}, "messages[0].content"),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
            "messages[0].content[0].text",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "video"}]}]}, "messages[0].content[0].type"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}],
                    }
                ]
            },
            "messages[0].content[0].type",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content[0].image_url.url",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "u", "detail": "max"}}],
                    }
                ]
            },
            "messages[0].content[0].image_url.detail",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}]},
            "messages[0].content[0].file.file_id",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "file", "file": {"filename": "a.pdf"}}]}]},
            "messages[0].content[0].file.file_data",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "system", "content": [{"type": "image_url"}]},
                ]
            },
            "messages[1].content[0].type",
        ),
        ({"messages": [{"role": "assistant", "content": 3}]}, "messages[0].content"),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "image_url"}]}]},
            "messages[0].content[0].type",
        ),
        ({"messages": [{"role": "assistant", "content": "x", "refusal": 1}]}, "messages[0].refusal"),
        ({"messages": [{"role": "assistant", "tool_calls": {}}]}, "messages[0].tool_calls"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"type": "function"}]}]},
            "messages[0].tool_calls[0].id",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]},
            "messages[0].tool_calls[0].function.arguments",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}
                ]
            },
            "messages[0].tool_calls[0].function.name",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}
                ]
            },
            "messages[0].tool_calls[0].type",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "tool_calls": [call("c1", "f")]},
                ]
            },
            "messages[1].tool_calls[0].id",
        ),
        ({"messages": [{"role": "tool", "content": "r"}]}, "messages[0].tool_call_id"),
        (
            {"messages": [{"role": "tool", "tool_call_id": "nope", "content": "r"}]},
            "messages[0].tool_call_id",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "tool_calls": [call("c1", "f")]},
                    {"role": "tool", "tool_call_id": "c1"},
                ]
            },
            "messages[1].content",
        ),
        ({"messages": [{"role": "function", "name": "f", "content": "r"}]}, "messages[0].role"),
        (
            {"messages": [{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}]},
            "messages[0].function_call",
        ),
    ],
)
def test_malformed_messages_are_refused_with_the_offending_param(fields: dict[str, Any], param: str) -> None:
    assert refusal(**fields).param == param


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": {}}, "tools"),
        ({"tools": ["f"]}, "tools[0]"),
        ({"tools": [{"type": "custom", "custom": {"name": "patch"}}]}, "tools[0].type"),
        ({"tools": [{"type": "function"}]}, "tools[0].function"),
        ({"tools": [{"type": "function", "function": {"name": ""}}]}, "tools[0].function.name"),
        ({"tools": [tool("f", parameters="{}")]}, "tools[0].function.parameters"),
        ({"tools": [tool("f", strict="yes")]}, "tools[0].function.strict"),
        ({"tools": [tool("f", description=3)]}, "tools[0].function.description"),
        ({"tools": [tool("f")], "tool_choice": "any"}, "tool_choice"),
        (
            {"tools": [tool("f")], "tool_choice": {"type": "custom", "custom": {"name": "f"}}},
            "tool_choice.type",
        ),
        (
            {"tools": [tool("f")], "tool_choice": {"type": "function", "function": {"name": "g"}}},
            "tool_choice.function.name",
        ),
        ({"tools": [tool("f")], "tool_choice": {"type": "function"}}, "tool_choice.function"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": [tool("f")], "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
        ({"functions": [{"name": "f"}]}, "functions"),
        ({"function_call": "auto"}, "function_call"),
    ],
)
def test_malformed_or_unsupported_tools_are_refused(fields: dict[str, Any], param: str) -> None:
    assert refusal(**fields).param == param


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"n": 2}, "n"),
        ({"n": "1"}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 3}, "top_logprobs"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"stop": 5}, "stop"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"stop": ["END", ""]}, "stop"),
        ({"web_search_options": {"search_context_size": "low"}}, "web_search_options"),
        ({"temperature": "hot"}, "temperature"),
        ({"top_p": True}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_completion_tokens": 1.5}, "max_completion_tokens"),
        ({"stream": "yes"}, "stream"),
        ({"stream_options": []}, "stream_options"),
        ({"reasoning_effort": 3}, "reasoning_effort"),
        ({"verbosity": "chatty"}, "verbosity"),
        ({"response_format": "json"}, "response_format"),
        ({"response_format": {"type": "yaml"}}, "response_format.type"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}},
            "response_format.json_schema.name",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "n"}}},
            "response_format.json_schema.schema",
        ),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "n", "schema": {}, "strict": "no"},
                }
            },
            "response_format.json_schema.strict",
        ),
    ],
)
def test_unsupported_or_malformed_options_are_refused(fields: dict[str, Any], param: str) -> None:
    assert refusal(**fields).param == param


# --------------------------------------------------------------------------------------------------
# A realistic Responses event sequence (the shapes of sublane_sim's Codex plan, PROTOCOLS §1.4)
# --------------------------------------------------------------------------------------------------


def _with_sdk_only_usage_fields(event: dict[str, Any]) -> dict[str, Any]:
    """The SDK's usage type requires `cache_write_tokens`, which the Codex backend does not send."""
    event = copy.deepcopy(event)
    usage = (event.get("response") or {}).get("usage")
    if usage:
        usage["input_tokens_details"].setdefault("cache_write_tokens", 0)
    return event


class ResponsesStream:
    """Builds one Codex turn's events; every event is validated with the SDK's event types."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.output: list[dict[str, Any]] = []
        self.response: dict[str, Any] = {
            "id": "resp_1",
            "object": "response",
            "created_at": CREATED,
            "status": "in_progress",
            "error": None,
            "incomplete_details": None,
            "instructions": "",
            "model": MODEL,
            "output": [],
            "parallel_tool_calls": False,
            "store": False,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
            "metadata": {},
        }
        self._emit("response.created", response=dict(self.response))
        self._emit("response.in_progress", response=dict(self.response))

    def _emit(self, kind: str, *, sdk_typed: bool = True, **fields: Any) -> None:
        event = {"type": kind, **fields, "sequence_number": len(self.events)}
        if sdk_typed:
            _STREAM_EVENT.validate_python(_with_sdk_only_usage_fields(event))
        self.events.append(event)

    def _item(self, kind: str, item: dict[str, Any]) -> None:
        self._emit(kind, output_index=len(self.output), item=item)

    def reasoning(self, *parts: list[str]) -> ResponsesStream:
        item_id = f"rs_{len(self.output)}"
        index = len(self.output)
        self._item("response.output_item.added", {"id": item_id, "type": "reasoning", "summary": []})
        summary = []
        for summary_index, chunks in enumerate(parts):
            ref: dict[str, Any] = {"item_id": item_id, "output_index": index, "summary_index": summary_index}
            self._emit(
                "response.reasoning_summary_part.added", **ref, part={"type": "summary_text", "text": ""}
            )
            for chunk in chunks:
                self._emit("response.reasoning_summary_text.delta", **ref, delta=chunk)
            text = "".join(chunks)
            self._emit("response.reasoning_summary_text.done", **ref, text=text)
            self._emit(
                "response.reasoning_summary_part.done", **ref, part={"type": "summary_text", "text": text}
            )
            summary.append({"type": "summary_text", "text": text})
        done = {"id": item_id, "type": "reasoning", "summary": summary, "encrypted_content": "gAAAA-sim"}
        self._item("response.output_item.done", done)
        self.output.append(done)
        return self

    def message(self, *chunks: str, deltas: bool = True) -> ResponsesStream:
        item_id = f"msg_{len(self.output)}"
        ref: dict[str, Any] = {"item_id": item_id, "output_index": len(self.output), "content_index": 0}
        message = {
            "id": item_id,
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        self._item("response.output_item.added", message)
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self._emit("response.content_part.added", **ref, part=part)
        for chunk in chunks if deltas else ():
            self._emit("response.output_text.delta", **ref, delta=chunk, logprobs=[])
        text = "".join(chunks)
        self._emit("response.output_text.done", **ref, text=text, logprobs=[])
        full = dict(part, text=text)
        self._emit("response.content_part.done", **ref, part=full)
        done = dict(message, status="completed", content=[full])
        self._item("response.output_item.done", done)
        self.output.append(done)
        return self

    def function_call(
        self, call_id: str, name: str, arguments: str, *, deltas: bool = True
    ) -> ResponsesStream:
        index = len(self.output)
        item_id = f"fc_{index}"
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        self._item("response.output_item.added", item)
        ref: dict[str, Any] = {"item_id": item_id, "output_index": index}
        third = max(1, len(arguments) // 3)
        for start in range(0, len(arguments), third) if deltas else ():
            self._emit(
                "response.function_call_arguments.delta", **ref, delta=arguments[start : start + third]
            )
        self._emit("response.function_call_arguments.done", **ref, name=name, arguments=arguments)
        done = dict(item, status="completed", arguments=arguments)
        self._item("response.output_item.done", done)
        self.output.append(done)
        return self

    def final(self, status: str = "completed", reason: str | None = None) -> dict[str, Any]:
        return dict(
            self.response,
            status=status,
            output=self.output,
            incomplete_details={"reason": reason} if reason else None,
            usage={
                "input_tokens": 120,
                "input_tokens_details": {"cached_tokens": 64},
                "output_tokens": 30,
                "output_tokens_details": {"reasoning_tokens": 8},
                "total_tokens": 150,
            },
        )

    def completed(self) -> list[dict[str, Any]]:
        self._emit("response.completed", response=self.final())
        return self.events

    def incomplete(self, reason: str) -> list[dict[str, Any]]:
        self._emit("response.incomplete", response=self.final("incomplete", reason))
        return self.events

    def failed(self, code: str, message: str) -> list[dict[str, Any]]:
        failed = dict(
            self.response, status="failed", output=self.output, error={"code": code, "message": message}
        )
        # Codex failure codes (context_length_exceeded, insufficient_quota, …) are outside the
        # public API's enum of `response.error.code`, so only the public ones are SDK-checked.
        self._emit("response.failed", sdk_typed=code in _PUBLIC_ERROR_CODES, response=failed)
        return self.events


def run(
    events: list[dict[str, Any]], *, include_usage: bool = False
) -> tuple[ChatStreamTranslator, list[dict[str, Any]]]:
    translator = ChatStreamTranslator(
        model=MODEL, completion_id=COMPLETION_ID, created=CREATED, include_usage=include_usage
    )
    chunks = [chunk for event in events for chunk in translator.feed(event)]
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    return translator, chunks


def deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]


def joined(chunks: list[dict[str, Any]], key: str) -> str:
    return "".join(delta.get(key) or "" for delta in deltas(chunks))


def function_calls(completion: ChatCompletion) -> list[tuple[str, str, str]]:
    calls = completion.choices[0].message.tool_calls or []
    assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
    return [
        (call.id, call.function.name, call.function.arguments)
        for call in calls
        if isinstance(call, ChatCompletionMessageFunctionToolCall)
    ]


def accumulate(chunks: list[dict[str, Any]]) -> ChatCompletion:
    """What the official SDK assembles from the chunks (as `client.chat.completions.stream` does)."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    return state.get_final_completion()


# --------------------------------------------------------------------------------------------------
# Stream translation
# --------------------------------------------------------------------------------------------------


def test_text_stream_opens_with_the_role_and_closes_with_stop() -> None:
    translator, chunks = run(ResponsesStream().message("Hel", "lo", " world").completed())

    assert deltas(chunks)[0] == {"role": "assistant", "content": ""}
    assert [delta.get("role") for delta in deltas(chunks)].count("assistant") == 1
    assert joined(chunks, "content") == "Hello world"
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop", "logprobs": None}
    assert all(chunk["choices"][0]["finish_reason"] is None for chunk in chunks[:-1])
    assert all("usage" not in chunk for chunk in chunks)
    assert {(chunk["id"], chunk["object"], chunk["created"], chunk["model"]) for chunk in chunks} == {
        (COMPLETION_ID, "chat.completion.chunk", CREATED, MODEL)
    }
    assert translator.finished and translator.error is None


def test_include_usage_adds_a_final_usage_chunk() -> None:
    _, chunks = run(ResponsesStream().message("Hi").completed(), include_usage=True)

    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 8},
    }
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert all(chunk["usage"] is None for chunk in chunks[:-1])


def test_reasoning_summaries_stream_as_reasoning_content_before_text() -> None:
    events = (
        ResponsesStream().reasoning(["Think", "ing."], ["Second", " part."]).message("Answer").completed()
    )

    _, chunks = run(events)

    assert joined(chunks, "reasoning_content") == "Thinking.\n\nSecond part."
    first_text = next(i for i, delta in enumerate(deltas(chunks)) if delta.get("content"))
    last_reasoning = max(i for i, delta in enumerate(deltas(chunks)) if delta.get("reasoning_content"))
    assert last_reasoning < first_text
    assert joined(chunks, "content") == "Answer"


def test_text_and_two_function_calls_stream_as_indexed_tool_calls() -> None:
    events = (
        ResponsesStream()
        .message("Let me check.")
        .function_call("call_1", "get_weather", '{"city": "Paris"}')
        .function_call("call_2", "get_time", '{"tz": "Europe/Rome"}')
        .completed()
    )

    _, chunks = run(events)

    tool_deltas = [call for delta in deltas(chunks) for call in delta.get("tool_calls") or []]
    assert tool_deltas[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert [call["index"] for call in tool_deltas if "id" in call] == [0, 1]
    assert all(set(call) == {"index", "function"} for call in tool_deltas if "id" not in call)
    for index, expected in enumerate(['{"city": "Paris"}', '{"tz": "Europe/Rome"}']):
        parts = [call["function"]["arguments"] for call in tool_deltas if call["index"] == index]
        assert "".join(parts) == expected
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_sdk_accumulates_the_stream_into_the_same_message_as_the_non_stream_conversion() -> None:
    stream = (
        ResponsesStream()
        .reasoning(["Plan."])
        .message("Checking.")
        .function_call("call_1", "get_weather", '{"city": "Paris"}')
        .function_call("call_2", "get_weather", '{"city": "Rome"}')
    )
    events = stream.completed()

    _, chunks = run(events, include_usage=True)
    streamed = accumulate(chunks)
    direct = ChatCompletion.model_validate(
        responses_to_chat_completion(
            stream.final(), model=MODEL, completion_id=COMPLETION_ID, created=CREATED
        )
    )

    assert streamed.choices[0].message.content == direct.choices[0].message.content == "Checking."
    assert streamed.choices[0].finish_reason == direct.choices[0].finish_reason == "tool_calls"
    assert function_calls(streamed) == function_calls(direct)
    assert json.loads(function_calls(streamed)[1][2]) == {"city": "Rome"}
    assert (direct.choices[0].message.model_extra or {})["reasoning_content"] == "Plan."
    assert streamed.usage == direct.usage


@pytest.mark.parametrize(
    ("reason", "finish"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
def test_incomplete_response_finishes_with_length_or_content_filter(reason: str, finish: str) -> None:
    translator, chunks = run(ResponsesStream().message("Trunc").incomplete(reason), include_usage=True)

    assert chunks[-2]["choices"][0]["finish_reason"] == finish
    assert chunks[-1]["usage"]["completion_tokens"] == 30
    assert translator.finished and translator.error is None


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        ("context_length_exceeded", "invalid_request_error"),
        ("rate_limit_exceeded", "rate_limit_error"),
        ("insufficient_quota", "insufficient_quota"),
        ("server_is_overloaded", "server_error"),
    ],
)
def test_failed_response_sets_an_error_and_emits_no_terminal_chunk(code: str, error_type: str) -> None:
    events = ResponsesStream().message("Part").failed(code, "It failed.")

    translator, chunks = run(events, include_usage=True)

    assert translator.finished
    assert translator.error == {"message": "It failed.", "type": error_type, "param": None, "code": code}
    assert all(chunk["choices"][0]["finish_reason"] is None for chunk in chunks)
    assert joined(chunks, "content") == "Part"


@pytest.mark.parametrize(
    ("event", "expected_type", "expected_code"),
    [
        (
            {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "param": None},
            "rate_limit_error",
            "rate_limit_exceeded",
        ),
        (
            {
                "type": "error",
                "error": {"type": "server_error", "code": "server_is_overloaded", "message": "Busy."},
            },
            "server_error",
            "server_is_overloaded",
        ),
        ({"type": "error", "message": "Boom."}, "server_error", None),
    ],
)
def test_top_level_error_event_sets_an_error(
    event: dict[str, Any], expected_type: str, expected_code: str | None
) -> None:
    translator, chunks = run([*ResponsesStream().events, event])

    assert translator.error is not None
    assert translator.error["type"] == expected_type
    assert translator.error["code"] == expected_code
    assert translator.error["message"]
    assert translator.finished
    assert deltas(chunks) == [{"role": "assistant", "content": ""}]


def test_failed_response_without_error_details_still_has_a_message() -> None:
    translator, _ = run([{"type": "response.failed", "response": {"status": "failed", "error": None}}])

    assert translator.error == {
        "message": "The upstream model failed to respond.",
        "type": "server_error",
        "param": None,
        "code": None,
    }


def test_events_after_the_terminal_one_are_ignored() -> None:
    events = ResponsesStream().message("Done").completed()
    translator, _ = run(events)

    assert translator.feed({"type": "response.output_text.delta", "item_id": "x", "delta": "late"}) == []
    assert translator.feed(events[-1]) == []


def test_role_is_sent_first_even_without_response_created() -> None:
    events = [
        event for event in ResponsesStream().message("Hi").completed() if event["type"] != "response.created"
    ]

    _, chunks = run(events)

    assert deltas(chunks)[0] == {"role": "assistant", "content": ""}
    assert joined(chunks, "content") == "Hi"


def test_empty_turn_still_yields_role_and_finish_chunks() -> None:
    _, chunks = run(
        [{"type": "response.completed", "response": {"status": "completed", "output": []}}],
        include_usage=True,
    )

    assert [chunk["choices"][0]["finish_reason"] for chunk in chunks] == [None, "stop"]
    assert len(chunks) == 2  # no usage object upstream, so no usage chunk


def test_unknown_and_bookkeeping_events_produce_nothing() -> None:
    translator = ChatStreamTranslator(
        model=MODEL, completion_id=COMPLETION_ID, created=CREATED, include_usage=False
    )

    for kind in (
        "response.in_progress",
        "response.content_part.added",
        "response.web_search_call.searching",
        "keepalive",
    ):
        assert translator.feed({"type": kind}) == []
    assert not translator.finished


def test_refusal_deltas_stream_as_delta_refusal() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r"}},
        {
            "type": "response.refusal.delta",
            "item_id": "msg_0",
            "output_index": 0,
            "content_index": 0,
            "delta": "I can't",
        },
        {
            "type": "response.refusal.delta",
            "item_id": "msg_0",
            "output_index": 0,
            "content_index": 0,
            "delta": " help.",
        },
        {"type": "response.completed", "response": {"status": "completed"}},
    ]

    _, chunks = run(events)

    assert joined(chunks, "refusal") == "I can't help."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_done_items_fill_in_text_and_arguments_that_had_no_deltas() -> None:
    events = (
        ResponsesStream()
        .message("Whole ", "text", deltas=False)
        .function_call("call_1", "f", '{"a": 1}', deltas=False)
        .completed()
    )

    _, chunks = run(events)

    assert joined(chunks, "content") == "Whole text"
    arguments = [
        call["function"]["arguments"] for delta in deltas(chunks) for call in delta.get("tool_calls") or []
    ]
    assert "".join(arguments) == '{"a": 1}'
    assert arguments.count('{"a": 1}') == 1


def test_function_call_known_only_from_its_done_item_is_emitted_whole() -> None:
    item = {"id": "fc_0", "type": "function_call", "call_id": "call_z", "name": "g", "arguments": '{"b": 2}'}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]

    _, chunks = run(events)

    assert function_calls(accumulate(chunks)) == [("call_z", "g", '{"b": 2}')]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_text_from_deltas_is_not_repeated_by_the_done_item() -> None:
    _, chunks = run(ResponsesStream().message("once").completed())

    assert joined(chunks, "content") == "once"


# --------------------------------------------------------------------------------------------------
# Non-stream conversion
# --------------------------------------------------------------------------------------------------


def complete(response: dict[str, Any]) -> dict[str, Any]:
    completion = responses_to_chat_completion(
        response, model=MODEL, completion_id=COMPLETION_ID, created=CREATED
    )
    ChatCompletion.model_validate(completion)
    return completion


def test_text_response_becomes_a_chat_completion() -> None:
    completion = complete(ResponsesStream().message("Hello", " there").final())

    assert completion == {
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello there", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 30,
            "total_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 8},
        },
    }


def test_function_calls_become_tool_calls_with_null_content() -> None:
    response = (
        ResponsesStream().function_call("call_1", "f", '{"x": 1}').function_call("call_2", "g", "{}").final()
    )

    message = complete(response)["choices"][0]

    assert message["finish_reason"] == "tool_calls"
    assert message["message"]["content"] is None
    assert message["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]


def test_reasoning_summary_becomes_reasoning_content() -> None:
    response = (
        ResponsesStream().reasoning(["First."], ["Second."]).reasoning(["Third."]).message("Answer").final()
    )

    message = complete(response)["choices"][0]["message"]

    assert message["reasoning_content"] == "First.\n\nSecond.\n\nThird."
    assert message["content"] == "Answer"


def test_raw_reasoning_text_is_used_when_there_is_no_summary() -> None:
    response = {
        "status": "completed",
        "output": [
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "raw thoughts"}],
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
        ],
    }

    assert complete(response)["choices"][0]["message"]["reasoning_content"] == "raw thoughts"


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), ("something_new", "length")],
)
def test_incomplete_response_maps_its_reason_to_finish_reason(reason: str, finish: str) -> None:
    response = ResponsesStream().function_call("call_1", "f", '{"x"').final("incomplete", reason)

    assert complete(response)["choices"][0]["finish_reason"] == finish


def test_refusal_output_becomes_message_refusal() -> None:
    response = {
        "status": "completed",
        "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}
        ],
    }

    message = complete(response)["choices"][0]["message"]

    assert message["refusal"] == "No."
    assert message["content"] is None


def test_empty_output_yields_empty_content_and_no_usage_when_upstream_sent_none() -> None:
    completion = complete({"status": "completed", "output": []})

    assert completion["choices"][0]["message"]["content"] == ""
    assert "usage" not in completion


def test_usage_without_total_or_details_is_summed_and_zero_filled() -> None:
    completion = complete(
        {"status": "completed", "output": [], "usage": {"input_tokens": 5, "output_tokens": 7}}
    )

    assert completion["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 7,
        "total_tokens": 12,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


@pytest.mark.parametrize("status", ["failed", "in_progress", None])
def test_a_response_that_did_not_finish_has_no_chat_completion(status: str | None) -> None:
    with pytest.raises(ValueError, match="completed or incomplete"):
        responses_to_chat_completion(
            {"status": status}, model=MODEL, completion_id=COMPLETION_ID, created=CREATED
        )
