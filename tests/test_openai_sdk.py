"""The official openai SDK against SubLane: Responses and Chat Completions, streamed and not, with tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import openai
import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour

TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


_clients: list[openai.OpenAI] = []


def _sdk(pool: Pool, key: str | None = None) -> openai.OpenAI:
    client = openai.OpenAI(
        base_url=f"{pool.gateway.url}/v1", api_key=key or pool.key, max_retries=0, timeout=30
    )
    _clients.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def test_responses_streaming_with_the_sdk(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    client = _sdk(pool)
    with client.responses.stream(model="gpt-5-codex", input="Say hi", store=False) as stream:
        text = "".join(event.delta for event in stream if event.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text and final.status == "completed"
    assert final.output_text == text
    assert final.usage is not None and final.usage.input_tokens > 0


def test_responses_non_streaming_with_the_sdk(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    response = _sdk(pool).responses.create(model="gpt-5-codex", input="Say hi")
    assert response.status == "completed" and response.output_text


def test_chat_completions_with_the_sdk(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    completion = _sdk(pool).chat.completions.create(
        model="gpt-5-codex",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    )
    assert completion.choices[0].message.content
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    upstream = pool.sim.requests(endpoint="codex.responses")[-1].body
    assert (
        upstream["instructions"] == "Be brief." and upstream["stream"] is True and upstream["store"] is False
    )
    assert pool.finished[-1].protocol == "chat_completions" and pool.finished[-1].outcome == "success"


def test_chat_completions_streaming_tool_calls_with_the_sdk(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True, deltas=3))
    stream = _sdk(pool).chat.completions.create(
        model="gpt-5-codex",
        messages=[{"role": "user", "content": "Read a.txt"}],
        tools=TOOLS_CHAT,  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    calls = [call for chunk in chunks if chunk.choices for call in chunk.choices[0].delta.tool_calls or []]
    assert calls and calls[0].function and calls[0].function.name == "read_file"
    arguments = "".join(call.function.arguments or "" for call in calls if call.function)
    assert "path" in json.loads(arguments)
    finishes = [
        chunk.choices[0].finish_reason for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason
    ]
    assert finishes == ["tool_calls"]
    assert chunks[-1].usage is not None and chunks[-1].choices == []


def test_chat_tool_results_go_back_upstream(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _sdk(pool).chat.completions.create(
        model="gpt-5-codex",
        messages=[
            {"role": "user", "content": "Read a.txt"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"a"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
        ],
        tools=TOOLS_CHAT,  # type: ignore[arg-type]
    )
    items = pool.sim.requests(endpoint="codex.responses")[-1].body["input"]
    assert {"type": "function_call_output", "call_id": "call_1", "output": "hello"} in items


def test_sdk_errors_map_to_sdk_exceptions(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    with pytest.raises(openai.AuthenticationError):
        _sdk(pool, "sl_nope").responses.create(model="gpt-5-codex", input="hi")
    with pytest.raises(openai.NotFoundError) as missing:
        _sdk(pool).responses.create(model="no-such-model", input="hi")
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        _sdk(pool).chat.completions.create(model="gpt-5-codex", messages=[], n=1)
    assert bad.value.param == "messages"
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="3")
    )
    with pytest.raises(openai.RateLimitError):
        _sdk(pool).responses.create(model="gpt-5-codex", input="hi")
