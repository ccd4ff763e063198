"""PAID-1 ``openai-compatible``: a Chat Completions server reached with a base URL and an API key
(the simulator's, which lists no models), imported through the API and serving every client
protocol — Chat Completions natively, Responses and Messages through the hub — streamed and JSON,
with tool calls; its key never leaves the sealed column."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import websockets
from gateway_pool import Pool, recorded
from google import genai
from google.genai import types
from test_real_clients import ANSWER, _claude, _client, _codex, _gemini

from sublane_sim import Behaviour, SimAccount

PROVIDER = "openai-compatible"
MODEL = "qwen3-coder-30b"
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def _import(pool: Pool, account: SimAccount, **credentials: Any) -> Any:
    body = {
        "provider": PROVIDER,
        "name": "local-vllm",
        "credentials": {"api_key": account.api_key, "base_url": pool.sim.compat_base_url, **credentials},
        "group_ids": [1],
    }
    return pool.admin.post("/api/accounts/import", json=body)


@pytest.fixture
def compat_pool(make_pool: Callable[..., Pool]) -> tuple[Pool, SimAccount]:
    pool = make_pool(accounts=0, failover_attempts=0)
    account = pool.sim.create_account("compat")
    response = _import(pool, account, models=[MODEL])
    assert response.status_code == 201, response.text
    pool.account_ids.append(response.json()["id"])
    pool.sim_accounts.append(account)
    pool.settle()
    priced = pool.admin.put(f"/api/prices/{MODEL}", json={"input": 0.2, "output": 0.8})
    assert priced.status_code == 200, priced.text
    return pool, account


def _openai(pool: Pool) -> openai.OpenAI:
    return openai.OpenAI(api_key=pool.key, base_url=f"{pool.gateway.url}/v1", max_retries=0)


def _anthropic(pool: Pool) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=pool.key, base_url=pool.gateway.url, max_retries=0)


def _upstream_bodies(pool: Pool, account: SimAccount) -> list[dict[str, Any]]:
    return [record.body for record in pool.sim.requests(account_id=account.id, endpoint="compat.chat")]


def test_paid_1_compat_import_checks_the_key_and_never_shows_it(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every log line of the gateway, not only its warnings
    pool = make_pool(accounts=0)
    account = pool.sim.create_account("compat")
    refused = pool.admin.post(
        "/api/accounts/import",
        json={
            "provider": PROVIDER,
            "name": "bad",
            "credentials": {"api_key": "sk-not-a-key-0123456789", "base_url": pool.sim.compat_base_url,
                            "models": [MODEL]},
            "group_ids": [1],
        },
    )  # fmt: skip
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_credentials"
    unlisted = _import(pool, account)  # the server lists no models and the import named none
    assert unlisted.status_code == 400 and unlisted.json()["error"]["code"] == "invalid_credentials"
    assert "models" in unlisted.json()["error"]["message"]
    no_url = pool.admin.post(
        "/api/accounts/import",
        json={
            "provider": PROVIDER,
            "name": "x",
            "credentials": {"api_key": account.api_key},
            "group_ids": [1],
        },
    )
    assert no_url.status_code == 400
    assert pool.admin.get("/api/accounts").json()["items"] == []  # nothing stored before the check
    imported = _import(pool, account, models=[MODEL])
    assert imported.status_code == 201, imported.text
    account_id = imported.json()["id"]
    pool.settle()
    priced = pool.admin.put(f"/api/prices/{MODEL}", json={"input": 0.2, "output": 0.8})  # PAID-3
    assert priced.status_code == 200, priced.text
    providers = {item["name"]: item for item in pool.admin.get("/api/providers").json()["items"]}
    assert providers[PROVIDER]["label"] == "OpenAI-compatible server (API key)"  # found by entry point
    shown = pool.admin.get(f"/api/accounts/{account_id}").json()
    assert shown["provider"] == PROVIDER and shown["billing"] == "metered"
    assert shown["identity"]["plan"] == "api_key"
    # PAID-3: a metered model without a price is not served
    assert pool.admin.put(f"/api/prices/{MODEL}", json={"input": 0.2, "output": 0.8}).status_code == 200
    client = _openai(pool)
    assert MODEL in {model.id for model in client.models.list().data}
    answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content
    record = recorded(pool, 1)[0]
    assert record["provider"] == PROVIDER and record["outcome"] == "success"
    seen = [
        pool.admin.get(path).text
        for path in ("/api/accounts", f"/api/accounts/{account_id}", "/api/accounts/runtime", "/api/audit",
                     "/api/requests", f"/api/requests/{record['id']}", "/metrics")
    ]  # fmt: skip
    seen.append(caplog.text)
    assert all(account.api_key not in text for text in seen)
    actions = [item["action"] for item in pool.admin.get("/api/audit").json()["items"]]
    assert "account.import" in actions
    exported = pool.admin.post("/api/accounts/export", json={"passphrase": "a long passphrase"})
    assert exported.status_code == 200 and account.api_key.encode() not in exported.content  # sealed


@pytest.mark.parametrize("stream", [False, True])
def test_paid_1_compat_serves_chat_completions_natively_with_tool_calls(
    compat_pool: tuple[Pool, SimAccount], stream: bool
) -> None:
    pool, account = compat_pool
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, tool_calls=2))
    tools: Any = [{"type": "function", "function": {k: v for k, v in WEATHER_TOOL.items() if k != "type"}}]
    messages: Any = [{"role": "user", "content": "Weather in Paris and Rome?"}]
    client = _openai(pool)
    if stream:
        chunks = list(
            client.chat.completions.create(model=MODEL, messages=messages, tools=tools, stream=True)
        )
        calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
        named = [call[0].function.name for call in calls if call[0].function and call[0].function.name]
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finishes == ["tool_calls"]
    else:
        answer = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        assert answer.choices[0].finish_reason == "tool_calls"
        named = [call.function.name for call in answer.choices[0].message.tool_calls or []]  # type: ignore[union-attr]
    assert named == ["get_weather", "get_weather"]
    (sent,) = _upstream_bodies(pool, account)
    assert sent["messages"] == messages and sent["tools"] == tools  # passed through untranslated
    assert sent["stream"] is stream
    record = recorded(pool, 1)[0]
    assert record["protocol"] == "chat_completions" and record["outcome"] == "success"
    assert record["input_tokens"] > 0 and record["output_tokens"] > 0  # the usage chunk was read
    assert record["usage"]["cost_usd"] is not None and record["usage"]["cost_usd"] > 0  # priced


def test_paid_1_compat_serves_a_responses_client_streamed_and_json_with_a_tool_round_trip(
    compat_pool: tuple[Pool, SimAccount],
) -> None:
    pool, account = compat_pool
    client = _openai(pool)
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, reasoning_deltas=2))
    tools: Any = [WEATHER_TOOL]
    with client.responses.stream(model=MODEL, input="Weather in Paris?", tools=tools) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_response()
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]
    call = final.output[-1]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "sim"}
    assert final.usage is not None and final.usage.input_tokens > 0  # the usage chunk after the finish
    answer = client.responses.create(
        model=MODEL,
        instructions="Be brief.",
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny, 21 °C"},
        ],
        tools=tools,
        max_output_tokens=300,
        stream=False,
    )
    assert answer.status == "completed" and answer.output_text
    first, second = _upstream_bodies(pool, account)
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert second["max_tokens"] == 300
    assert second["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.call_id, "type": "function",
             "function": {"name": "get_weather", "arguments": call.arguments}},
        ]},
        {"role": "tool", "tool_call_id": call.call_id, "content": "Sunny, 21 °C"},
    ]  # fmt: skip
    records = recorded(pool, 2)
    assert [r["outcome"] for r in records] == ["success", "success"]
    assert all(r["provider"] == PROVIDER and r["output_tokens"] > 0 for r in records)


@pytest.mark.parametrize("stream", [False, True])
def test_paid_1_compat_serves_a_messages_client(compat_pool: tuple[Pool, SimAccount], stream: bool) -> None:
    pool, account = compat_pool
    pool.sim.script(account.id, Behaviour.ok(tool_call=True))
    client = _anthropic(pool)
    tools: Any = [
        {"name": "get_weather", "description": "weather", "input_schema": WEATHER_TOOL["parameters"]}
    ]
    messages: Any = [{"role": "user", "content": "Weather in Paris?"}]
    if stream:
        with client.messages.stream(model=MODEL, max_tokens=200, messages=messages, tools=tools) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(model=MODEL, max_tokens=200, messages=messages, tools=tools)
    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use"]
    tool_use = message.content[-1]
    assert tool_use.type == "tool_use" and tool_use.input == {"city": "sim"}
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    (sent,) = _upstream_bodies(pool, account)
    assert sent["max_tokens"] == 200 and sent["tools"][0]["function"]["name"] == "get_weather"
    assert recorded(pool, 1)[0]["protocol"] == "messages"
    counted = client.messages.count_tokens(model=MODEL, messages=messages, tools=tools)
    assert counted.input_tokens > 0  # estimated: a Chat Completions server has no count of its own
    assert len(_upstream_bodies(pool, account)) == 1


def test_paid_1_compat_429_cools_for_retry_after(
    compat_pool: tuple[Pool, SimAccount],
) -> None:
    pool, account = compat_pool
    account_id = pool.account_ids[0]
    client = _openai(pool)
    pool.sim.script(account.id, Behaviour.error(429, retry_after="30"))
    with pytest.raises(openai.APIStatusError) as limited:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert limited.value.status_code == 429
    runtime = {item["id"]: item for item in pool.admin.get("/api/accounts/runtime").json()["accounts"]}
    cooling = runtime[account_id]
    assert cooling["state"] == "cooling", cooling
    assert 20 <= cooling["cooldown_until"] - time.time() <= 31
    assert len(_upstream_bodies(pool, account)) == 1  # no retry against the limit


def test_paid_1_compat_401_marks_the_account_unauthorized(compat_pool: tuple[Pool, SimAccount]) -> None:
    pool, account = compat_pool
    account_id = pool.account_ids[0]
    pool.sim.script(account.id, Behaviour.error(401))
    with pytest.raises(openai.APIStatusError) as refused:
        _openai(pool).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code in (401, 502, 503)
    shown = pool.admin.get(f"/api/accounts/{account_id}").json()
    assert shown["auth_state"] == "reauth_required" and shown["auth_error"] == "unauthorized"
    assert len(_upstream_bodies(pool, account)) == 1  # no refresh exists: the key is not tried again


async def test_paid_1_compat_serves_responses_websocket_turns(compat_pool: tuple[Pool, SimAccount]) -> None:
    pool, account = compat_pool
    url = pool.gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06"}
    async with websockets.connect(url, additional_headers=headers) as socket:
        previous = None
        for said in ("first turn", "second turn"):
            frame: dict[str, Any] = {"type": "response.create", "model": MODEL, "input": said}
            if previous:
                frame["previous_response_id"] = previous
            await socket.send(json.dumps(frame))
            events: list[dict[str, Any]] = []
            while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
                events.append(json.loads(await asyncio.wait_for(socket.recv(), 10)))
            assert events[-1]["type"] == "response.completed", events[-1]
            assert events[-1]["response"]["usage"]["input_tokens"] > 0
            previous = events[-1]["response"]["id"]
    last = _upstream_bodies(pool, account)[-1]
    users = [message["content"] for message in last["messages"] if message["role"] == "user"]
    assert users == ["first turn", "second turn"]  # the gateway kept the history (no upstream state)


@pytest.mark.e2e
@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_paid_1_codex_cli_through_an_openai_compatible_account(
    compat_pool: tuple[Pool, SimAccount], tmp_path: Path, websocket: bool
) -> None:
    _client("codex")
    pool, account = compat_pool
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    result = _codex(pool, tmp_path, websocket=websocket, model=MODEL)
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2, [(r.protocol, r.outcome, r.error_code) for r in pool.finished]
    assert {record.provider for record in served} == {PROVIDER}
    assert {record.protocol for record in served} <= {"responses", "responses_ws"}
    bodies = _upstream_bodies(pool, account)
    assert any(message["role"] == "tool" for message in bodies[-1]["messages"])  # the tool round trip
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize("stream", [False, True])
def test_paid_1_compat_serves_a_gemini_client(compat_pool: tuple[Pool, SimAccount], stream: bool) -> None:
    pool, account = compat_pool
    pool.sim.script(account.id, Behaviour.ok(tool_call=True))
    client = genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))
    declaration = types.FunctionDeclaration(
        name="get_weather",
        description="The weather in a city.",
        parameters_json_schema=WEATHER_TOOL["parameters"],
    )
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
    if stream:
        chunks = list(client.models.generate_content_stream(model=MODEL, contents="Weather?", config=config))
        calls = [call for chunk in chunks for call in chunk.function_calls or []]
        usage = chunks[-1].usage_metadata
    else:
        answer = client.models.generate_content(model=MODEL, contents="Weather?", config=config)
        calls, usage = answer.function_calls or [], answer.usage_metadata
    assert [(call.name, call.args) for call in calls] == [("get_weather", {"city": "sim"})]
    assert usage is not None and (usage.prompt_token_count or 0) > 0
    (sent,) = _upstream_bodies(pool, account)
    assert sent["messages"] == [{"role": "user", "content": "Weather?"}]
    assert recorded(pool, 1)[0]["protocol"] == "gemini"


@pytest.mark.e2e
def test_paid_1_claude_code_through_an_openai_compatible_account(
    compat_pool: tuple[Pool, SimAccount], tmp_path: Path
) -> None:
    _client("claude")
    pool, account = compat_pool
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    run = _claude(pool, tmp_path, "-p", "--model", MODEL, "say hi")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2 and {record.protocol for record in served} == {"messages"}
    assert any(
        message["role"] == "tool" for body in _upstream_bodies(pool, account) for message in body["messages"]
    )


@pytest.mark.e2e
def test_paid_1_gemini_cli_through_an_openai_compatible_account(
    compat_pool: tuple[Pool, SimAccount], tmp_path: Path
) -> None:
    _client("gemini")
    pool, account = compat_pool
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", MODEL)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2 and {record.provider for record in served} == {PROVIDER}
