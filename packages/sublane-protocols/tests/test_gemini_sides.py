"""The Gemini sides of the translation hub (XLAT-2, XLAT-3), checked with the official SDKs.

- upstream side: Responses (hub) bodies → Gemini ``generateContent`` bodies, Gemini chunks and
  answers → hub events, each event validated as the ``openai`` SDK's ``ResponseStreamEvent``;
- client side: Gemini client bodies (the captured Gemini CLI 0.61 request among them) → hub
  bodies, hub events (the captured Codex streams) → Gemini chunks read back by the official
  ``google-genai`` SDK through an ``httpx.MockTransport``;
- a Gemini → hub → Gemini round trip keeps text, function calls (with their ids) and images.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

import httpx
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from protocol_fixtures import STREAMS, real_client_requests, stream_events
from pydantic import TypeAdapter

from sublane_protocols import ResponsesCollector, TranslationRefused
from sublane_protocols._hub import HubTranslator
from sublane_protocols.gemini import GeminiClientSide, GeminiUpstreamSide
from sublane_protocols.gemini._from_responses import SIGNATURE_PLACEHOLDER
from sublane_protocols.gemini._to_responses import stable_call_id
from sublane_protocols.responses._client_side import ResponsesClientSide

genai = pytest.importorskip("google.genai", reason="google-genai is installed with sublane-sim[test]")
from google.genai import errors, types  # noqa: E402

MODEL = "gemini-3-flash"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQK"
_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")

UPSTREAM = GeminiUpstreamSide()
CLIENT = GeminiClientSide()


def hub(*items: Any, **fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": list(items), **fields}


def user(*content: Any) -> dict[str, Any]:
    """A user message: one string as it is, parts as a list."""
    single = len(content) == 1 and isinstance(content[0], str | list)
    return {"type": "message", "role": "user", "content": content[0] if single else list(content)}


def text(value: str) -> dict[str, Any]:
    return {"type": "input_text", "text": value}


def function_tool(name: str, **properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {
        "type": "function",
        "name": name,
        "description": f"The {name} tool.",
        "parameters": schema,
        "strict": True,
    }


def refused(call: Any, *args: Any) -> TranslationRefused:
    with pytest.raises(TranslationRefused) as caught:
        call(*args)
    return caught.value


def events_of(
    chunks: Iterable[Mapping[str, Any]], request: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The hub events of Gemini chunks, each validated by the ``openai`` SDK."""
    translator = UPSTREAM.new_events(request or hub(user("hi")), model=MODEL)
    events = [event for chunk in chunks for event in translator.feed(chunk)]
    for event in events:
        _EVENT.validate_python(event)
    return events


def terminal(events: list[dict[str, Any]]) -> dict[str, Any]:
    ends = [event for event in events if event["type"] in _TERMINAL]
    assert len(ends) == 1 and ends[0] is events[-1]
    Response.model_validate(ends[0]["response"])
    return ends[0]


def chunk(*parts: Any, finish: str | None = None, usage: Any = None, **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL, "responseId": "r1", **extra}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


# --------------------------------------------------------------------------------------------------
# the upstream side: hub body → Gemini body
# --------------------------------------------------------------------------------------------------


def test_xlat_2_system_and_multi_turn_history() -> None:
    body = hub(
        {"type": "message", "role": "developer", "content": [text("Use tabs.")]},
        user("first"),
        user([text("second"), text("third")]),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "hm"}],
            "encrypted_content": "gAAA",
        },
        {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
        {"role": "user", "content": "again"},
        instructions="You are terse.",
        store=False,
        stream=True,
        include=["reasoning.encrypted_content"],
        prompt_cache_key="k",
        parallel_tool_calls=True,
    )
    assert UPSTREAM.request_from_responses(body) == {
        "systemInstruction": {"parts": [{"text": "You are terse."}, {"text": "Use tabs."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "first"}, {"text": "second"}, {"text": "third"}]},
            {"role": "model", "parts": [{"text": "ok"}, {"text": "no"}]},
            {"role": "user", "parts": [{"text": "again"}]},
        ],
    }


def test_xlat_2_images_and_files() -> None:
    body = hub(
        user(
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "high"},
            {"type": "input_image", "image_url": "https://example.com/cat.webp?x=1"},
            {"type": "input_image", "image_url": "https://example.com/render"},
            {"type": "input_file", "file_data": f"data:application/pdf;base64,{PDF}", "filename": "a.pdf"},
            {"type": "input_file", "file_url": "https://example.com/paper.pdf"},
        )
    )
    parts = UPSTREAM.request_from_responses(body)["contents"][0]["parts"]
    assert parts == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"mimeType": "image/webp", "fileUri": "https://example.com/cat.webp?x=1"}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/render"}},
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/paper.pdf"}},
    ]


def parallel_history(model: str = MODEL) -> dict[str, Any]:
    return {
        "model": model,
        "input": [
            user("look at both"),
            {
                "type": "function_call",
                "call_id": "toolu_01",
                "name": "read_file",
                "arguments": '{"path": "a"}',
            },
            {"type": "function_call", "call_id": "call_02", "name": "shell", "arguments": ""},
            {"type": "function_call_output", "call_id": "toolu_01", "output": "A"},
            {
                "type": "function_call_output",
                "call_id": "call_02",
                "output": [
                    text("listing"),
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
                ],
            },
        ],
        "tools": [function_tool("read_file", path={"type": "string"}), function_tool("shell")],
    }


def test_xlat_2_parallel_calls_and_outputs_keep_their_ids() -> None:
    request = UPSTREAM.request_from_responses(parallel_history())
    model_turn, answers = request["contents"][1], request["contents"][2]
    assert model_turn == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": "read_file", "args": {"path": "a"}, "id": "toolu_01"},
                "thoughtSignature": SIGNATURE_PLACEHOLDER,
            },
            {"functionCall": {"name": "shell", "args": {}, "id": "call_02"}},
        ],
    }
    assert answers == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "read_file", "id": "toolu_01", "response": {"output": "A"}}},
            {"functionResponse": {"name": "shell", "id": "call_02", "response": {"output": "listing"}}},
            {"inlineData": {"mimeType": "image/png", "data": PNG}},
        ],
    }
    declarations = request["tools"][0]["functionDeclarations"]
    assert declarations == [
        {
            "name": "read_file",
            "description": "The read_file tool.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"path": {"type": "STRING"}},
                "required": ["path"],
            },
        },
        {"name": "shell", "description": "The shell tool."},  # no parameters: none declared
    ]


@pytest.mark.parametrize(
    ("model", "placeholder"),
    [
        ("gemini-3-flash", True),
        ("gemini-3.1-pro-high", True),
        ("gemini-pro-agent", True),
        ("gemini-2.5-flash", False),
        ("claude-sonnet-4-6", False),
        ("gpt-oss-120b-medium", False),
    ],
)
def test_xlat_2_gemini_3_history_gets_the_documented_signature_placeholder(
    model: str, placeholder: bool
) -> None:
    parts = UPSTREAM.request_from_responses(parallel_history(model))["contents"][1]["parts"]
    assert ("thoughtSignature" in parts[0]) is placeholder
    assert "thoughtSignature" not in parts[1]  # only the first call of a parallel set carries one


def test_xlat_2_malformed_history_is_refused_as_invalid() -> None:
    bad_arguments = hub(
        user("x"), {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{oops"}
    )
    error = refused(UPSTREAM.request_from_responses, bad_arguments)
    assert (error.code, error.param) == ("invalid_request", "input[1].arguments")
    orphan = hub(user("x"), {"type": "function_call_output", "call_id": "nobody", "output": "?"})
    error = refused(UPSTREAM.request_from_responses, orphan)
    assert (error.code, error.param) == ("invalid_request", "input[1].call_id")
    bad_image = hub(user({"type": "input_image", "image_url": "data:image/png,notbase64"}))
    assert refused(UPSTREAM.request_from_responses, bad_image).param == "input[0].content[0].image_url"
    assert refused(UPSTREAM.request_from_responses, hub()).param == "input"


def test_xlat_2_custom_tools_take_one_string_input() -> None:
    patch_tool = {
        "type": "custom",
        "name": "apply_patch",
        "description": "Apply a patch.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
    }
    body = hub(
        user("fix it"),
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done"},
        tools=[patch_tool],
        tool_choice={"type": "custom", "name": "apply_patch"},
    )
    request = UPSTREAM.request_from_responses(body)
    declaration = request["tools"][0]["functionDeclarations"][0]
    assert declaration["parameters"]["properties"]["input"]["type"] == "STRING"
    assert declaration["parameters"]["required"] == ["input"]
    assert "lark grammar" in declaration["description"] and "start: /.+/" in declaration["description"]
    assert request["contents"][1]["parts"][0]["functionCall"] == {
        "name": "apply_patch",
        "args": {"input": "*** Begin Patch"},
        "id": "c1",
    }
    assert request["contents"][2]["parts"][0]["functionResponse"]["response"] == {"output": "Done"}
    assert request["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["apply_patch"]}
    }
    events = events_of(
        [chunk({"functionCall": {"name": "apply_patch", "args": {"input": "P"}, "id": "x"}}, finish="STOP")],
        body,
    )
    item = terminal(events)["response"]["output"][0]
    assert item["type"] == "custom_tool_call" and item["input"] == "P" and item["call_id"] == "x"


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ({"type": "function", "name": "shell"}, {"mode": "ANY", "allowedFunctionNames": ["shell"]}),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "shell"}]},
            {"mode": "ANY", "allowedFunctionNames": ["shell"]},
        ),
    ],
)
def test_xlat_2_tool_choice(choice: Any, config: dict[str, Any]) -> None:
    body = hub(user("x"), tools=[function_tool("shell", cmd={"type": "string"})], tool_choice=choice)
    assert UPSTREAM.request_from_responses(body)["toolConfig"] == {"functionCallingConfig": config}


def test_xlat_2_generation_settings_and_structured_output() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    body = hub(
        user("x"),
        max_output_tokens=256,
        temperature=0.2,
        top_p=0.9,
        stop=["END", "STOP"],
        text={
            "format": {"type": "json_schema", "name": "a", "schema": schema, "strict": True},
            "verbosity": "low",
        },
    )
    assert UPSTREAM.request_from_responses(body)["generationConfig"] == {
        "maxOutputTokens": 256,
        "temperature": 0.2,
        "topP": 0.9,
        "stopSequences": ["END", "STOP"],
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "OBJECT",
            "properties": {"answer": {"type": "STRING"}},
            "required": ["answer"],
        },
    }
    json_mode = hub(user("x"), text={"format": {"type": "json_object"}})
    assert UPSTREAM.request_from_responses(json_mode)["generationConfig"] == {
        "responseMimeType": "application/json"
    }
    error = refused(UPSTREAM.request_from_responses, hub(user("x"), stop=list("abcdef")))
    assert (error.code, error.param) == ("unsupported_for_provider", "stop")


@pytest.mark.parametrize(
    ("effort", "thinking"),
    [
        ("none", {"includeThoughts": False}),
        ("minimal", {"includeThoughts": True, "thinkingBudget": 512}),
        ("low", {"includeThoughts": True, "thinkingBudget": 1024}),
        ("medium", {"includeThoughts": True, "thinkingBudget": 8192}),
        ("high", {"includeThoughts": True, "thinkingBudget": 16384}),
        ("xhigh", {"includeThoughts": True, "thinkingBudget": 24576}),
    ],
)
def test_xlat_2_reasoning_effort_to_thinking_budget(effort: str, thinking: dict[str, Any]) -> None:
    body = hub(user("x"), reasoning={"effort": effort, "summary": "auto"})
    assert UPSTREAM.request_from_responses(body)["generationConfig"]["thinkingConfig"] == thinking


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt"),
        ({"background": True}, "background"),
        ({"input": [{"type": "compaction", "encrypted_content": "x"}]}, "input[0]"),
        ({"input": [{"type": "compaction_summary", "encrypted_content": "x"}]}, "input[0]"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
        ({"input": [{"type": "web_search_call", "id": "ws_1", "status": "completed"}]}, "input[0]"),
        ({"input": [{"type": "local_shell_call", "call_id": "c"}]}, "input[0]"),
        ({"input": [user({"type": "input_image", "file_id": "file_1"})]}, "input[0].content[0].file_id"),
        ({"input": [user({"type": "input_audio", "input_audio": {}})]}, "input[0].content[0].type"),
        ({"tools": [{"type": "web_search"}]}, "tools"),
        ({"tools": [{"type": "file_search", "vector_store_ids": []}]}, "tools"),
        ({"tools": [{"type": "code_interpreter"}]}, "tools"),
        ({"tools": [{"type": "image_generation"}]}, "tools"),
        ({"tools": [{"type": "computer_use_preview"}]}, "tools"),
        ({"tools": [{"type": "mcp", "server_label": "x"}]}, "tools"),
        ({"tools": [{"type": "local_shell"}]}, "tools"),
    ],
)
def test_xlat_3_refused_for_gemini(extra: dict[str, Any], param: str) -> None:
    body = {**hub(user("hi")), **extra}
    error = refused(UPSTREAM.request_from_responses, body)
    assert (error.code, error.param) == ("unsupported_for_provider", param)


def test_xlat_2_count_request_holds_only_contents() -> None:
    body = dict(parallel_history(), instructions="Be terse.")
    count = UPSTREAM.count_request_from_responses(body)
    assert count is not None and list(count) == ["contents"]
    preamble = count["contents"][0]
    assert preamble["role"] == "user" and preamble["parts"][0] == {"text": "Be terse."}
    assert "read_file" in preamble["parts"][1]["text"]  # the declarations count too
    assert count["contents"][1:] == UPSTREAM.request_from_responses(body)["contents"]
    assert UPSTREAM.counted_tokens({"totalTokens": 42}) == 42
    assert UPSTREAM.counted_tokens({}) == 0


# --------------------------------------------------------------------------------------------------
# the upstream side: Gemini chunks → hub events
# --------------------------------------------------------------------------------------------------


def test_xlat_2_text_stream_to_hub_events() -> None:
    events = events_of(
        [
            chunk({"text": "Hel"}, usage={"promptTokenCount": 5}),
            chunk({"text": "lo"}),
            chunk({"text": "!"}, finish="STOP", usage={"promptTokenCount": 5, "candidatesTokenCount": 3}),
        ]
    )
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert [event["delta"] for event in events if event["type"] == "response.output_text.delta"] == [
        "Hel",
        "lo",
        "!",
    ]
    end = terminal(events)
    assert end["type"] == "response.completed" and end["response"]["id"] == "resp_r1"
    assert end["response"]["output"][0]["content"][0]["text"] == "Hello!"
    collector = ResponsesCollector()
    for event in events:
        collector.feed(event)
    assert collector.result() == end["response"]


def test_xlat_2_thoughts_become_a_reasoning_item_before_the_text() -> None:
    events = events_of(
        [
            chunk({"text": "**Plan**\n", "thought": True}),
            chunk({"text": "read it", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"}),
            chunk({"text": "", "thoughtSignature": "bW9yZQ=="}, {"text": "Answer"}, finish="STOP"),
        ]
    )
    output = terminal(events)["response"]["output"]
    assert [item["type"] for item in output] == ["reasoning", "message"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "**Plan**\nread it"}]
    assert "encrypted_content" not in output[0]
    assert "c2lnbmF0dXJl" not in json.dumps(events)  # XLAT-2: the signature never leaves


def test_xlat_2_parallel_function_calls_become_items() -> None:
    events = events_of(
        [
            chunk({"text": "Reading both."}),
            chunk(
                {"functionCall": {"name": "read_file", "args": {"path": "a"}, "id": "toolu_9"}},
                {"functionCall": {"name": "shell", "args": {"cmd": "ls"}}},
                finish="STOP",
            ),
        ]
    )
    output = terminal(events)["response"]["output"]
    assert [item["type"] for item in output] == ["message", "function_call", "function_call"]
    assert output[1]["call_id"] == "toolu_9" and json.loads(output[1]["arguments"]) == {"path": "a"}
    assert output[2]["call_id"].startswith("call_") and json.loads(output[2]["arguments"]) == {"cmd": "ls"}
    deltas = [event for event in events if event["type"] == "response.function_call_arguments.delta"]
    assert len(deltas) == 2  # each call's arguments in one delta
    assert [event["output_index"] for event in events if event["type"] == "response.output_item.added"] == [
        0,
        1,
        2,
    ]


@pytest.mark.parametrize(
    ("reason", "kind", "detail"),
    [
        ("STOP", "response.completed", None),
        ("MAX_TOKENS", "response.incomplete", "max_output_tokens"),
        ("SAFETY", "response.incomplete", "content_filter"),
        ("RECITATION", "response.incomplete", "content_filter"),
        ("BLOCKLIST", "response.incomplete", "content_filter"),
        ("PROHIBITED_CONTENT", "response.incomplete", "content_filter"),
        ("SPII", "response.incomplete", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "response.failed", "MALFORMED_FUNCTION_CALL"),
        ("OTHER", "response.failed", "OTHER"),
    ],
)
def test_xlat_2_finish_reasons(reason: str, kind: str, detail: str | None) -> None:
    end = terminal(events_of([chunk({"text": "x"}, finish=reason)]))
    assert end["type"] == kind
    if kind == "response.incomplete":
        assert end["response"]["incomplete_details"] == {"reason": detail}
    if kind == "response.failed":  # a code of the Responses API; Gemini's reason in the message
        assert end["response"]["error"]["code"] == "server_error"
        assert end["response"]["error"]["message"] == f"The model stopped with {detail}."


def test_xlat_2_usage_arithmetic_from_gemini() -> None:
    usage = {
        "promptTokenCount": 100,
        "toolUsePromptTokenCount": 7,
        "cachedContentTokenCount": 40,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 157,
    }
    end = terminal(events_of([chunk({"text": "x"}, finish="STOP", usage=usage)]))
    assert end["response"]["usage"] == {
        "input_tokens": 107,
        "input_tokens_details": {"cached_tokens": 40, "cache_write_tokens": 0},
        "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 30},
        "total_tokens": 157,
    }


def test_xlat_2_usage_of_an_earlier_chunk_counts_and_a_later_one_is_not_waited_for() -> None:
    earlier = {"promptTokenCount": 9, "candidatesTokenCount": 1}
    events = events_of(
        [
            chunk({"text": "x"}, usage=earlier),
            chunk({"text": "y"}, finish="STOP"),
            chunk(usage={"promptTokenCount": 99}),
        ]
    )
    assert terminal(events)["response"]["usage"]["input_tokens"] == 9


def test_xlat_2_errors_and_blocked_prompts() -> None:
    error = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exhausted."}}
    end = terminal(events_of([chunk({"text": "partial"}), error]))
    assert end["type"] == "response.failed"
    assert end["response"]["error"] == {
        "code": "rate_limit_exceeded",
        "message": "Quota exhausted. (RESOURCE_EXHAUSTED)",
    }
    assert end["response"]["output"][0]["content"][0]["text"] == "partial"
    blocked = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 3},
    }
    end = terminal(events_of([blocked]))
    assert (
        end["type"] == "response.incomplete"
        and end["response"]["incomplete_details"]["reason"] == "content_filter"
    )


def test_xlat_2_json_answer_to_responses() -> None:
    answer = chunk(
        {"text": "hmm", "thought": True},
        {"text": "Hi"},
        {"functionCall": {"name": "shell", "args": {"cmd": "ls"}, "id": "c7"}},
        finish="STOP",
        usage={"promptTokenCount": 10, "candidatesTokenCount": 4, "thoughtsTokenCount": 2},
    )
    response = UPSTREAM.answer_to_responses(answer, model=MODEL, request=hub(user("x")))
    Response.model_validate(response)
    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["reasoning", "message", "function_call"]
    assert response["usage"]["output_tokens"] == 6
    no_reason = UPSTREAM.answer_to_responses(chunk({"text": "ok"}), model=MODEL, request={})
    assert no_reason["status"] == "completed" and no_reason["output"][0]["content"][0]["text"] == "ok"


# --------------------------------------------------------------------------------------------------
# the client side: Gemini body → hub body
# --------------------------------------------------------------------------------------------------


def gemini(*contents: Any, **fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "contents": list(contents), **fields}


def turn(role: str, *parts: Any) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def test_xlat_2_the_gemini_cli_request_to_responses() -> None:
    capture = real_client_requests()["gemini_cli_0.61.0"]
    body = dict(capture["body"], model="gemini-3-flash")
    request = CLIENT.request_to_responses(body)
    assert request["model"] == "gemini-3-flash" and request["store"] is False and request["stream"] is True
    assert request["input"][0]["role"] == "developer"  # the CLI's system prompt, not 'instructions'
    assert "instructions" not in request
    assert request["input"][1] == {
        "type": "message",
        "role": "user",
        "content": [text("<removed: 702 chars>"), text("say hi")],
    }
    assert [tool["name"] for tool in request["tools"]][:3] == ["update_topic", "list_directory", "read_file"]
    assert all(tool["strict"] is False and tool["type"] == "function" for tool in request["tools"])
    assert request["tool_choice"] == "auto" and request["parallel_tool_calls"] is True
    assert request["reasoning"] == {
        "effort": "high",
        "summary": "auto",
    }  # thinkingLevel HIGH + includeThoughts
    assert (request["temperature"], request["top_p"]) == (1, 0.95)  # topK has no Responses field: dropped


def test_xlat_2_system_instruction_as_string_or_content() -> None:
    as_string = CLIENT.request_to_responses(gemini(turn("user", {"text": "q"}), systemInstruction="Be kind."))
    as_content = CLIENT.request_to_responses(
        gemini(
            turn("user", {"text": "q"}), systemInstruction={"role": "user", "parts": [{"text": "Be kind."}]}
        )
    )
    assert (
        as_string["input"][0]
        == as_content["input"][0]
        == {"type": "message", "role": "developer", "content": [text("Be kind.")]}
    )


def test_xlat_2_url_safe_base64_from_the_sdk_reaches_other_upstreams_in_the_standard_alphabet() -> None:
    # Google's JSON takes bytes in either alphabet, padded or not; google-genai sends URL-safe
    # base64, which neither Codex's data URLs nor Claude's base64 image sources accept.
    png = bytes(range(248, 256)) * 4  # bytes whose base64 has "+" and "/" in the standard alphabet
    part = types.Part.from_bytes(data=png, mime_type="image/png")
    sent = json.loads(
        types.Content(role="user", parts=[part]).model_dump_json(exclude_none=True, by_alias=True)
    )
    data = (sent["parts"][0].get("inlineData") or sent["parts"][0]["inline_data"])["data"]
    standard = base64.b64encode(png).decode()
    assert "+" in standard and data != standard and base64.urlsafe_b64decode(data) == png
    unpadded = {
        "inlineData": {
            "mimeType": "text/plain",
            "data": base64.urlsafe_b64encode(b"hi?>").decode().rstrip("="),
        }
    }
    request = CLIENT.request_to_responses(
        gemini(turn("user", {"inlineData": {"mimeType": "image/png", "data": data}}, unpadded))
    )
    assert request["input"][0]["content"] == [
        {"type": "input_image", "image_url": f"data:image/png;base64,{standard}", "detail": "auto"},
        text("hi?>"),
    ]
    with pytest.raises(TranslationRefused) as refused:
        CLIENT.request_to_responses(
            gemini(turn("user", {"inlineData": {"mimeType": "image/png", "data": "a*b"}}))
        )
    assert refused.value.param == "contents[0].parts[0].data"


def test_xlat_2_multi_turn_with_images_files_and_thoughts() -> None:
    body = gemini(
        turn(
            "user",
            {"text": "What is this?"},
            {"inlineData": {"mimeType": "image/png", "data": PNG}},
            {"inline_data": {"mime_type": "application/pdf", "data": PDF}},
            {"inlineData": {"mimeType": "text/plain", "data": "aGVsbG8="}},
            {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/a.jpg"}},
        ),
        turn("model", {"text": "thinking", "thought": True, "thoughtSignature": "c2ln"}, {"text": "A cat."}),
        turn("user", {"text": "Thanks"}),
        safetySettings=[{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
    )
    request = CLIENT.request_to_responses(body)
    assert request["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                text("What is this?"),
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
                {
                    "type": "input_file",
                    "file_data": f"data:application/pdf;base64,{PDF}",
                    "filename": "document.pdf",
                },
                text("hello"),
                {"type": "input_image", "image_url": "https://example.com/a.jpg", "detail": "auto"},
            ],
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]},
        {"type": "message", "role": "user", "content": [text("Thanks")]},
    ]
    assert "c2ln" not in json.dumps(request)


def calls_history(with_answer: bool) -> dict[str, Any]:
    contents = [
        turn("user", {"text": "read a and list"}),
        turn(
            "model",
            {"text": "On it."},
            {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
            {"functionCall": {"name": "shell", "args": {"cmd": "ls"}}},
        ),
        turn(
            "user",
            {"functionResponse": {"name": "shell", "response": {"output": "x y"}}},
            {"functionResponse": {"name": "read_file", "response": {"content": [1, 2]}}},
        ),
    ]
    if with_answer:
        contents += [
            turn("model", {"functionCall": {"name": "shell", "args": {"cmd": "pwd"}, "id": "call_from_us"}}),
            turn(
                "user",
                {"functionResponse": {"name": "shell", "id": "call_from_us", "response": {"output": "/"}}},
            ),
        ]
    return gemini(*contents)


def test_xlat_2_call_ids_are_stable_across_turns_and_pair_by_name() -> None:
    first = CLIENT.request_to_responses(calls_history(False))["input"]
    second = CLIENT.request_to_responses(calls_history(True))["input"]
    assert second[: len(first)] == first  # the same history gives the same ids on the next turn
    calls = [item for item in second if item["type"] == "function_call"]
    outputs = [item for item in second if item["type"] == "function_call_output"]
    assert [call["call_id"] for call in calls] == [
        stable_call_id(1, 1, "read_file"),
        stable_call_id(1, 2, "shell"),
        "call_from_us",
    ]
    by_id = {call["call_id"]: call["name"] for call in calls}
    assert [by_id[output["call_id"]] for output in outputs] == ["shell", "read_file", "shell"]
    assert outputs[0]["output"] == "x y" and json.loads(outputs[1]["output"]) == {"content": [1, 2]}
    assert outputs[2] == {"type": "function_call_output", "call_id": "call_from_us", "output": "/"}
    assert json.loads(calls[0]["arguments"]) == {"path": "a"}


def test_xlat_2_unmatched_function_response_is_refused() -> None:
    body = gemini(
        turn("user", {"text": "x"}), turn("user", {"functionResponse": {"name": "f", "response": {}}})
    )
    error = refused(CLIENT.request_to_responses, body)
    assert (error.code, error.param) == ("invalid_request", "contents[1].parts[0].functionResponse")


def test_xlat_2_function_declarations_to_tools() -> None:
    declarations = [
        {
            "name": "search",
            "description": "Search.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"q": {"type": "STRING", "nullable": True}},
                "required": ["q"],
            },
        },
        {
            "name": "open",
            "parametersJsonSchema": {
                "type": "object",
                "properties": {"url": {"type": "string", "format": "uri"}},
            },
        },
        {"name": "now"},
    ]
    request = CLIENT.request_to_responses(
        gemini(turn("user", {"text": "x"}), tools=[{"functionDeclarations": declarations}])
    )
    assert request["tools"] == [
        {
            "type": "function",
            "name": "search",
            "description": "Search.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": ["string", "null"]}},
                "required": ["q"],
            },
            "strict": False,
        },
        {
            "type": "function",
            "name": "open",
            "parameters": {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}},
            "strict": False,
        },
        {
            "type": "function",
            "name": "now",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        },
    ]


@pytest.mark.parametrize(
    ("config", "choice", "names"),
    [
        ({"mode": "AUTO"}, "auto", ["a", "b"]),
        ({"mode": "NONE"}, "none", ["a", "b"]),
        ({"mode": "ANY"}, "required", ["a", "b"]),
        ({"mode": "ANY", "allowedFunctionNames": ["b"]}, {"type": "function", "name": "b"}, ["a", "b"]),
        ({"mode": "ANY", "allowedFunctionNames": ["a", "b"]}, "required", ["a", "b"]),
        ({"mode": "any", "allowedFunctionNames": ["a", "c"]}, "required", ["a"]),
        ({"mode": "VALIDATED"}, "auto", ["a", "b"]),
    ],
)
def test_xlat_2_tool_config_to_tool_choice(config: dict[str, Any], choice: Any, names: list[str]) -> None:
    tools = [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}]
    body = gemini(turn("user", {"text": "x"}), tools=tools, toolConfig={"functionCallingConfig": config})
    request = CLIENT.request_to_responses(body)
    assert request["tool_choice"] == choice
    assert [tool["name"] for tool in request["tools"]] == names


def test_xlat_2_generation_config_to_responses() -> None:
    config = {
        "maxOutputTokens": 99,
        "temperature": 0.5,
        "topP": 0.8,
        "topK": 40,
        "seed": 3,
        "stopSequences": ["\n\n"],
        "responseMimeType": "application/json",
        "responseSchema": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}},
    }
    request = CLIENT.request_to_responses(gemini(turn("user", {"text": "x"}), generationConfig=config))
    assert {key: request[key] for key in ("max_output_tokens", "temperature", "top_p", "stop", "text")} == {
        "max_output_tokens": 99,
        "temperature": 0.5,
        "top_p": 0.8,
        "stop": ["\n\n"],
        "text": {
            "format": {
                "type": "json_schema",
                "name": "response",
                "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "strict": False,
            }
        },
    }
    json_schema = {"type": "object", "properties": {"x": {"const": 1}}}
    config = {"responseMimeType": "application/json", "responseJsonSchema": json_schema}
    request = CLIENT.request_to_responses(gemini(turn("user", {"text": "x"}), generationConfig=config))
    assert request["text"]["format"]["schema"] == json_schema
    config = {"responseMimeType": "application/json"}
    request = CLIENT.request_to_responses(gemini(turn("user", {"text": "x"}), generationConfig=config))
    assert request["text"] == {"format": {"type": "json_object"}}


@pytest.mark.parametrize(
    ("thinking", "reasoning"),
    [
        ({"thinkingBudget": 0}, {"effort": "none"}),
        ({"thinkingBudget": 0, "includeThoughts": True}, {"effort": "none"}),
        ({"thinkingBudget": 300}, {"effort": "minimal"}),
        ({"thinkingBudget": 1024, "includeThoughts": True}, {"effort": "low", "summary": "auto"}),
        ({"thinkingBudget": 8192}, {"effort": "medium"}),
        ({"thinkingBudget": 16384}, {"effort": "high"}),
        ({"thinkingBudget": 32768}, {"effort": "xhigh"}),
        ({"thinkingBudget": -1, "includeThoughts": True}, {"summary": "auto"}),
        ({"thinkingLevel": "LOW"}, {"effort": "low"}),
        ({"thinkingLevel": "high", "includeThoughts": True}, {"effort": "high", "summary": "auto"}),
        ({}, None),
    ],
)
def test_xlat_2_thinking_config_to_reasoning(
    thinking: dict[str, Any], reasoning: dict[str, Any] | None
) -> None:
    request = CLIENT.request_to_responses(
        gemini(turn("user", {"text": "x"}), generationConfig={"thinkingConfig": thinking})
    )
    assert request.get("reasoning") == reasoning


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"cachedContent": "cachedContents/abc"}, "cachedContent"),
        ({"generationConfig": {"candidateCount": 2}}, "generationConfig.candidateCount"),
        ({"generationConfig": {"responseLogprobs": True}}, "generationConfig.responseLogprobs"),
        (
            {"generationConfig": {"responseModalities": ["TEXT", "IMAGE"]}},
            "generationConfig.responseModalities",
        ),
        ({"generationConfig": {"speechConfig": {"voiceConfig": {}}}}, "generationConfig.speechConfig"),
        ({"generationConfig": {"responseMimeType": "text/x.enum"}}, "generationConfig.responseMimeType"),
        ({"tools": [{"googleSearch": {}}]}, "tools"),
        ({"tools": [{"codeExecution": {}}]}, "tools"),
        ({"tools": [{"urlContext": {}}]}, "tools"),
        ({"tools": [{"retrieval": {"vertexAiSearch": {}}}]}, "tools"),
        ({"tools": [{"functionDeclarations": [{"name": "f"}], "googleSearchRetrieval": {}}]}, "tools"),
        (
            {"contents": [turn("user", {"inlineData": {"mimeType": "audio/wav", "data": "AAAA"}})]},
            "contents[0].parts[0]",
        ),
        ({"contents": [turn("model", {"executableCode": {"code": "1"}})]}, "contents[0].parts[0]"),
    ],
)
def test_xlat_3_refused_for_gemini_clients(extra: dict[str, Any], param: str) -> None:
    body = {**gemini(turn("user", {"text": "x"})), **extra}
    error = refused(CLIENT.request_to_responses, body)
    assert (error.code, error.param) == ("unsupported_for_provider", param)


# --------------------------------------------------------------------------------------------------
# the client side: hub events → Gemini frames, read by google-genai
# --------------------------------------------------------------------------------------------------


def sdk(handler: Any) -> Any:
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return genai.Client(
        api_key="sl-test", http_options=types.HttpOptions(base_url="http://sublane.test", httpx_client=http)
    )


def serve(content: bytes, media_type: str = "text/event-stream") -> Any:
    return sdk(lambda request: httpx.Response(200, content=content, headers={"content-type": media_type}))


def frames_of(
    events: Iterable[Mapping[str, Any]], body: Mapping[str, Any] | None = None, **options: Any
) -> bytes:
    frames = CLIENT.new_frames(
        body or gemini(turn("user", {"text": "hi"})), model=MODEL, created=0, **options
    )
    out = b"".join(frames.feed(event) for event in events)
    return out + frames.trailer(None if frames.finished else "upstream_stream_error")


def sse_payloads(content: bytes) -> list[dict[str, Any]]:
    frames = content.decode().split("\r\n\r\n")
    assert frames[-1] == ""
    return [json.loads(frame.removeprefix("data: ")) for frame in frames[:-1]]


def stream_through_sdk(content: bytes) -> list[Any]:
    return list(serve(content).models.generate_content_stream(model=MODEL, contents="hi"))


def test_xlat_2_text_frames_through_google_genai() -> None:
    chunks = stream_through_sdk(frames_of(stream_events("plain_text")))
    fixture_text = "".join(
        event["delta"]
        for event in stream_events("plain_text")
        if event["type"] == "response.output_text.delta"
    )
    assert "".join(chunk.text or "" for chunk in chunks) == fixture_text
    last = chunks[-1]
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None and last.usage_metadata.prompt_token_count
    assert last.model_version == MODEL and last.response_id


def thoughts_body(include: bool) -> dict[str, Any]:
    return gemini(
        turn("user", {"text": "hi"}), generationConfig={"thinkingConfig": {"includeThoughts": include}}
    )


@pytest.mark.parametrize("include", [True, False])
def test_xlat_2_reasoning_frames_only_when_thoughts_were_asked_for(include: bool) -> None:
    events = stream_events("reasoning_summary_text")
    chunks = stream_through_sdk(frames_of(events, thoughts_body(include)))
    thoughts = [
        part.text for chunk in chunks for part in (chunk.candidates[0].content.parts or []) if part.thought
    ]
    summary = "".join(
        event["delta"] for event in events if event["type"] == "response.reasoning_summary_text.delta"
    )
    assert "".join(thoughts) == (summary if include else "")
    assert "".join(chunk.text or "" for chunk in chunks) == "Both files look fine."  # .text skips thoughts
    assert "encrypted_content" not in frames_of(events, thoughts_body(True)).decode()


def test_xlat_2_parallel_call_frames_through_google_genai() -> None:
    events = stream_events("parallel_function_calls")
    content = frames_of(events)
    calls = [
        part["functionCall"]
        for payload in sse_payloads(content)
        for part in payload["candidates"][0]["content"]["parts"]
        if "functionCall" in part
    ]
    assert len(calls) == 2  # one chunk per call, arguments complete
    chunks = stream_through_sdk(content)
    function_calls = [call for chunk in chunks for call in (chunk.function_calls or [])]
    assert [(call.name, call.args, call.id) for call in function_calls] == [
        ("shell", {"cmd": "sim"}, "call_45bddf0ca85731a6"),
        ("read_file", {"path": "README.md"}, "call_5e1f0a7d2b9c4e61"),
    ]
    usage = chunks[-1].usage_metadata
    assert (usage.prompt_token_count, usage.cached_content_token_count) == (3000, 2944)
    assert (usage.candidates_token_count, usage.thoughts_token_count, usage.total_token_count) == (4, 2, 3006)


def test_xlat_2_max_tokens_frames() -> None:
    chunks = stream_through_sdk(frames_of(stream_events("incomplete_max_tokens")))
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert "".join(chunk.text or "" for chunk in chunks) == "The answer is cut"


@pytest.mark.parametrize(
    ("fixture", "code"),
    [
        ("failed_mid_stream", "server_is_overloaded"),
        ("error_event_mid_stream", "rate_limit_exceeded"),
        ("cut_before_terminal", "upstream_stream_error"),
    ],
)
def test_xlat_2_failed_and_cut_streams_end_with_a_google_error(fixture: str, code: str) -> None:
    content = frames_of(stream_events(fixture))
    error = sse_payloads(content)[-1]["error"]
    assert error["code"] == 502 and code in error["message"] and error["details"][0]["reason"] == code
    seen: list[str] = []

    def read_all() -> None:
        for chunk in serve(content).models.generate_content_stream(model=MODEL, contents="hi"):
            seen.append(chunk.text or "")

    with pytest.raises(errors.ServerError) as raised:
        read_all()
    assert raised.value.code == 502 and "".join(seen)  # the text before the failure was delivered


@pytest.mark.parametrize("fixture", STREAMS)
def test_xlat_2_json_array_framing(fixture: str) -> None:
    content = frames_of(stream_events(fixture), json_array=True)
    assert content.startswith(b"[") and content.endswith(b"]")
    elements = json.loads(content)
    assert elements and all(isinstance(element, dict) for element in elements)
    last = elements[-1]
    assert ("error" in last) == (
        fixture in ("failed_mid_stream", "error_event_mid_stream", "cut_before_terminal")
    )


def test_xlat_2_usage_arithmetic_to_gemini() -> None:
    events = stream_events("plain_text")[:-1]
    completed = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "status": "completed",
            "output": [],
            "usage": {
                "input_tokens": 120,
                "input_tokens_details": {"cached_tokens": 100},
                "output_tokens": 50,
                "output_tokens_details": {"reasoning_tokens": 30},
                "total_tokens": 170,
            },
        },
    }
    usage = sse_payloads(frames_of([*events, completed]))[-1]["usageMetadata"]
    assert usage == {
        "promptTokenCount": 120,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
        "cachedContentTokenCount": 100,
        "totalTokenCount": 170,
    }


def collected(fixture: str) -> dict[str, Any]:
    collector = ResponsesCollector()
    for event in stream_events(fixture):
        collector.feed(event)
    result = collector.result()
    assert result is not None
    return result


def test_xlat_2_json_answer_through_google_genai() -> None:
    answer = CLIENT.answer_from_responses(collected("parallel_function_calls"), model=MODEL, created=0)
    response = serve(json.dumps(answer).encode(), "application/json").models.generate_content(
        model=MODEL, contents="hi"
    )
    assert [(call.name, call.id) for call in response.function_calls or []] == [
        ("shell", "call_45bddf0ca85731a6"),
        ("read_file", "call_5e1f0a7d2b9c4e61"),
    ]
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata.thoughts_token_count == 2
    text_answer = CLIENT.answer_from_responses(collected("reasoning_summary_text"), model=MODEL, created=0)
    response = serve(json.dumps(text_answer).encode(), "application/json").models.generate_content(
        model=MODEL, contents="hi"
    )
    assert response.text == "Both files look fine."
    cut = CLIENT.answer_from_responses(collected("incomplete_max_tokens"), model=MODEL, created=0)
    assert cut["candidates"][0]["finishReason"] == "MAX_TOKENS"
    with pytest.raises(ValueError, match="failed"):
        CLIENT.answer_from_responses(collected("failed_mid_stream"), model=MODEL, created=0)
    assert CLIENT.count_answer(17) == {"totalTokens": 17}


def test_xlat_2_google_genai_request_is_understood() -> None:
    """What the SDK sends (function declarations with ``parametersJsonSchema``, a config) translates."""
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        answer = CLIENT.answer_from_responses(collected("plain_text"), model=MODEL, created=0)
        return httpx.Response(200, json=answer)

    weather = types.FunctionDeclaration(
        name="get_weather",
        description="The weather in a city.",
        parameters_json_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    config = types.GenerateContentConfig(
        system_instruction="Answer briefly.",
        tools=[types.Tool(function_declarations=[weather])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        max_output_tokens=64,
        stop_sequences=["END"],
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=1024),
    )
    sdk(handler).models.generate_content(model=MODEL, contents="weather in Paris?", config=config)
    request = CLIENT.request_to_responses(dict(seen[0], model=MODEL))
    assert request["input"][0]["role"] == "developer"
    assert request["tools"][0]["name"] == "get_weather" and request["tools"][0]["parameters"]["required"] == [
        "city"
    ]
    assert (request["max_output_tokens"], request["stop"]) == (64, ["END"])
    assert request["reasoning"] == {"effort": "low", "summary": "auto"}


# --------------------------------------------------------------------------------------------------
# Gemini → hub → Gemini
# --------------------------------------------------------------------------------------------------


def test_xlat_2_round_trip_keeps_text_calls_and_images() -> None:
    body = gemini(
        turn("user", {"text": "what is in it?"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}),
        turn(
            "model",
            {"text": "Let me look."},
            {"functionCall": {"name": "zoom", "args": {"factor": 2}, "id": "z1"}},
        ),
        turn("user", {"functionResponse": {"name": "zoom", "id": "z1", "response": {"output": "zoomed"}}}),
        systemInstruction={"parts": [{"text": "Be precise."}]},
        tools=[
            {
                "functionDeclarations": [
                    {
                        "name": "zoom",
                        "parameters": {"type": "OBJECT", "properties": {"factor": {"type": "NUMBER"}}},
                    }
                ]
            }
        ],
    )
    cell = HubTranslator(CLIENT, UPSTREAM, ResponsesClientSide())
    upstream = cell.request(body)
    assert upstream["systemInstruction"] == {"parts": [{"text": "Be precise."}]}
    assert upstream["contents"][0] == body["contents"][0]
    assert upstream["contents"][1]["parts"][0] == {"text": "Let me look."}
    assert upstream["contents"][1]["parts"][1]["functionCall"] == {
        "name": "zoom",
        "args": {"factor": 2},
        "id": "z1",
    }
    assert upstream["contents"][2] == body["contents"][2]
    assert upstream["tools"][0]["functionDeclarations"][0]["parameters"] == {
        "type": "OBJECT",
        "properties": {"factor": {"type": "NUMBER"}},
    }

    stream = cell.new_stream(body, model=MODEL, created=0)
    upstream_chunks = [
        chunk({"text": "A ", "thought": True}),
        chunk({"text": "red "}),
        chunk({"text": "square."}, {"functionCall": {"name": "zoom", "args": {"factor": 4}, "id": "z2"}}),
        chunk(finish="STOP", usage={"promptTokenCount": 12, "candidatesTokenCount": 6}),
    ]
    content = b"".join(stream.feed(item) for item in upstream_chunks) + stream.trailer(None)
    parts = [
        part for payload in sse_payloads(content) for part in payload["candidates"][0]["content"]["parts"]
    ]
    assert parts == [
        {"text": "red "},
        {"text": "square."},
        {"functionCall": {"name": "zoom", "args": {"factor": 4}, "id": "z2"}},
    ]
    assert sse_payloads(content)[-1]["usageMetadata"]["promptTokenCount"] == 12
    answer = cell.answer(
        upstream_chunks[2] | {"candidates": [upstream_chunks[2]["candidates"][0] | {"finishReason": "STOP"}]},
        model=MODEL,
        created=0,
        body=body,
    )
    assert answer["candidates"][0]["content"]["parts"] == [
        {"text": "square."},
        {"functionCall": {"name": "zoom", "args": {"factor": 4}, "id": "z2"}},
    ]


def test_xlat_2_a_gemini_stream_cut_mid_way_fails_for_either_client() -> None:
    """EOF before any ``finishReason``: the upstream side writes no terminal event, the client
    side's trailer ends the turn as failed in the client's own shape."""
    partial = [chunk({"text": "Work"}), chunk({"text": "ing"})]
    responses_cell = HubTranslator(None, UPSTREAM, ResponsesClientSide())
    stream = responses_cell.new_stream(hub(user("x")), model=MODEL, created=0)
    content = b"".join(stream.feed(item) for item in partial) + stream.trailer("upstream_stream_error")
    events = [
        json.loads(line[len("data: ") :])
        for line in content.decode().splitlines()
        if line.startswith("data: ")
    ]
    for event in events[:-1]:  # the closing event is the hub's own (ResponsesFrames), not this side's
        _EVENT.validate_python(event)
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "upstream_stream_error"
    assert [event["delta"] for event in events if event["type"] == "response.output_text.delta"] == [
        "Work",
        "ing",
    ]

    gemini_cell = HubTranslator(CLIENT, UPSTREAM, ResponsesClientSide())
    stream = gemini_cell.new_stream(
        gemini(turn("user", {"text": "x"})), model=MODEL, created=0, json_array=True
    )
    content = b"".join(stream.feed(item) for item in partial) + stream.trailer("upstream_stream_error")
    elements = json.loads(content)
    assert [element["candidates"][0]["content"]["parts"][0]["text"] for element in elements[:-1]] == [
        "Work",
        "ing",
    ]
    assert elements[-1]["error"]["details"][0]["reason"] == "upstream_stream_error"
