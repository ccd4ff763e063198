"""The official OpenAI and Anthropic SDKs parse the simulator's Codex and Claude answers."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest
from openai.types.responses import FunctionToolParam, ResponseCompletedEvent, ResponseFunctionToolCall

from sublane_sim import Behaviour, Simulator

TOOL: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": True,
}


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDKs read credentials and base URLs from the environment; the sim's must win."""
    for name in (
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def openai_client(sim: Simulator) -> Iterator[openai.OpenAI]:
    account = sim.create_account("codex", require_stream=False)
    with openai.OpenAI(
        base_url=f"{sim.codex_base_url}/codex", api_key=account.api_key, max_retries=0
    ) as client:
        yield client


def test_openai_streaming_responses(sim: Simulator, openai_client: openai.OpenAI) -> None:
    with openai_client.responses.stream(
        model="gpt-5-codex",
        input="hello",
        store=False,
        reasoning={"effort": "low", "summary": "auto"},
        include=["reasoning.encrypted_content"],
    ) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed"
    assert final.output_text == "".join(deltas) and len(deltas) == 8
    assert final.usage is not None and final.usage.output_tokens_details.reasoning_tokens == 2
    assert [item.type for item in final.output] == ["reasoning", "message"]


def test_openai_raw_event_iteration_with_tool_call(sim: Simulator, openai_client: openai.OpenAI) -> None:
    account = sim.accounts()[0]
    sim.script(account.id, Behaviour.ok(deltas=2, tool_call=True))
    stream = openai_client.responses.create(
        model="gpt-5-codex", input="weather?", store=False, stream=True, tools=[TOOL]
    )
    events = list(stream)
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent)
    call = last.response.output[-1]
    assert isinstance(call, ResponseFunctionToolCall)
    assert call.name == "get_weather" and call.arguments == '{"city": "sim"}'


def test_openai_non_streaming(openai_client: openai.OpenAI) -> None:
    response = openai_client.responses.create(model="gpt-5-codex", input="hello", store=False)
    assert response.status == "completed" and response.output_text
    assert response.usage is not None and response.usage.input_tokens > 0


def test_openai_error_mapping(sim: Simulator, openai_client: openai.OpenAI) -> None:
    sim.script(sim.accounts()[0].id, Behaviour.error(429, resets_in_s=30))
    with pytest.raises(openai.RateLimitError):
        openai_client.responses.create(model="gpt-5-codex", input="hello", store=False)


@pytest.fixture
def claude_clients(sim: Simulator) -> Iterator[list[anthropic.Anthropic]]:
    account = sim.create_account("claude")
    clients = [
        anthropic.Anthropic(base_url=sim.claude_base_url, api_key=account.api_key, max_retries=0),
        anthropic.Anthropic(
            base_url=sim.claude_base_url,
            auth_token=account.access_token,
            default_headers={"anthropic-beta": "oauth-2025-04-20"},
            max_retries=0,
        ),
    ]
    yield clients
    for client in clients:
        client.close()


def test_anthropic_streaming_with_thinking(claude_clients: list[anthropic.Anthropic]) -> None:
    for client in claude_clients:
        with client.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=4096,
            thinking={"type": "enabled", "budget_tokens": 2048},
            messages=[{"role": "user", "content": "hi"}],
        ) as stream:
            text = "".join(stream.text_stream)
            message = stream.get_final_message()
        assert [block.type for block in message.content] == ["thinking", "text"]
        thinking = message.content[0]
        assert thinking.type == "thinking" and thinking.signature and thinking.thinking
        assert message.content[1].type == "text" and message.content[1].text == text
        assert message.stop_reason == "end_turn" and message.usage.output_tokens == 10


def test_anthropic_tools_and_non_streaming(sim: Simulator, claude_clients: list[anthropic.Anthropic]) -> None:
    client = claude_clients[0]
    sim.script(sim.accounts()[0].id, Behaviour.ok(tool_call=True), Behaviour.ok(tool_call=True))
    tools: list[anthropic.types.ToolParam] = [
        {
            "name": "get_weather",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    with client.messages.stream(
        model="claude-opus-4-8",
        max_tokens=512,
        tools=tools,
        messages=[{"role": "user", "content": "weather?"}],
    ) as stream:
        streamed = stream.get_final_message()
    tool_use = streamed.content[-1]
    assert tool_use.type == "tool_use" and tool_use.input == {"city": "sim"}
    assert streamed.stop_reason == "tool_use"
    plain = client.messages.create(
        model="claude-opus-4-8",
        max_tokens=512,
        tools=tools,
        messages=[{"role": "user", "content": "weather?"}],
    )
    assert plain.content[-1].type == "tool_use" and plain.usage.input_tokens > 0


def test_anthropic_overload_surfaces_as_an_error(
    sim: Simulator, claude_clients: list[anthropic.Anthropic]
) -> None:
    client = claude_clients[0]
    sim.script(sim.accounts()[0].id, Behaviour.overload(after_deltas=2))
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        client.messages.stream(
            model="claude-opus-4-8", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        for _ in stream:
            pass
