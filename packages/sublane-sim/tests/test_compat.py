"""The OpenAI-compatible Chat Completions server (PAID-1's ``openai-compatible`` upstream), read by
the official ``openai`` SDK: streams with usage, JSON answers, tool calls, keys, no model list."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from sublane_sim import Behaviour, Simulator

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
MODEL = "qwen3-coder-30b"


@pytest.fixture
def compat(sim: Simulator) -> Iterator[tuple[openai.OpenAI, str]]:
    account = sim.create_account("compat")
    with openai.OpenAI(api_key=account.api_key, base_url=sim.compat_base_url, max_retries=0) as client:
        yield client, account.id


def test_paid_1_sim_compat_streams_text_reasoning_and_usage(compat: tuple[openai.OpenAI, str]) -> None:
    client, _ = compat
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
        reasoning_effort="low",
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    assert any(getattr(c.choices[0].delta, "reasoning_content", None) for c in chunks if c.choices)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens_details is not None
    assert last.usage.completion_tokens_details.reasoning_tokens == 2


def test_paid_1_sim_compat_json_and_streamed_tool_calls(
    sim: Simulator, compat: tuple[openai.OpenAI, str]
) -> None:
    client, account = compat
    sim.script(account, Behaviour.ok(tool_call=True, tool_calls=2))
    answer = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "weather?"}],
        tools=[TOOL],  # type: ignore[list-item]
    )
    calls = answer.choices[0].message.tool_calls
    assert answer.choices[0].finish_reason == "tool_calls"
    assert calls is not None and len(calls) == 2
    assert answer.usage is not None and answer.usage.prompt_tokens > 0
    sim.script(account, Behaviour.ok(tool_call=True))
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "weather?"}],
        tools=[TOOL],
        stream=True,  # type: ignore[list-item]
    )
    pieces = [c.choices[0].delta.tool_calls for c in stream if c.choices and c.choices[0].delta.tool_calls]
    arguments = "".join(call[0].function.arguments or "" for call in pieces if call[0].function)
    assert arguments == '{"city": "sim"}'


def test_paid_1_sim_compat_refuses_keys_and_lists_no_models(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("compat")
    base = sim.compat_base_url
    assert http.get(f"{base}/models", headers={"authorization": "Bearer nope"}).status_code == 401
    assert (
        http.get(f"{base}/models", headers={"authorization": f"Bearer {account.api_key}"}).status_code == 404
    )
    other = sim.create_account("claude")
    refused = http.post(
        f"{base}/chat/completions",
        headers={"authorization": f"Bearer {other.api_key}"},
        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "Unauthorized"


def test_paid_1_sim_compat_scripted_faults(sim: Simulator, compat: tuple[openai.OpenAI, str]) -> None:
    client, account = compat
    sim.script(account, Behaviour.error(429, retry_after="7"), Behaviour.overload(after_deltas=2))
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.APIError, match="overloaded"):
        list(
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="not-served", messages=[{"role": "user", "content": "hi"}])
