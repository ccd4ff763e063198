"""The parrot provider through a real gateway: every client protocol, with no change outside its package.

The gateway found the provider by its entry point; these tests talk to it as clients do (the
official SDKs, a WebSocket) and look at what reached the parrot upstream.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import anthropic
import openai
import pytest
import websockets
from google import genai
from google.genai import types

from sublane_provider_parrot.testing import ParrotPool

WEATHER = {"city": "Paris"}


def _openai(pool: ParrotPool) -> openai.OpenAI:
    return openai.OpenAI(api_key=pool.key, base_url=f"{pool.url}/v1", max_retries=0)


def _anthropic(pool: ParrotPool) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=pool.key, base_url=pool.url, max_retries=0)


def _gemini(pool: ParrotPool) -> genai.Client:
    return genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.url))


def _records(pool: ParrotPool) -> list[dict[str, Any]]:
    response = pool.admin.get("/api/requests")
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def test_parrot_is_listed_by_the_gateway_from_its_own_package(parrot_pool: ParrotPool) -> None:
    providers = {item["name"]: item for item in pool_get(parrot_pool, "/api/providers")["items"]}
    assert providers["parrot"]["label"] == "Parrot (test provider)"
    assert providers["parrot"]["credential_file"] == "parrot.json"
    models = {item.id for item in _openai(parrot_pool).models.list().data}
    assert {"parrot-1", "parrot-1-mini"} <= models


def pool_get(pool: ParrotPool, path: str) -> Any:
    response = pool.admin.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def test_parrot_serves_responses_json_and_its_record(parrot_pool: ParrotPool) -> None:
    answer = _openai(parrot_pool).responses.create(model="parrot-1", input="hello there")
    assert answer.output_text == "parrot: hello there"
    record = _records(parrot_pool)[0]
    assert record["provider"] == "parrot" and record["outcome"] == "success"
    assert record["input_tokens"] == 2 and record["output_tokens"] == 3


def test_parrot_serves_responses_sse(parrot_pool: ParrotPool) -> None:
    with _openai(parrot_pool).responses.stream(model="parrot-1", input="stream me") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == "parrot: stream me"


async def test_parrot_serves_responses_over_a_websocket_turn_after_turn(parrot_pool: ParrotPool) -> None:
    url = parrot_pool.url.replace("http://", "ws://") + "/v1/responses"
    headers = {"authorization": f"Bearer {parrot_pool.key}", "openai-beta": "responses_websockets=2026-02-06"}
    turns = []
    async with websockets.connect(url, additional_headers=headers) as socket:
        previous = None
        for said in ("first turn", "second turn"):
            frame: dict[str, Any] = {"type": "response.create", "model": "parrot-1", "input": said}
            if previous:
                frame["previous_response_id"] = previous
            await socket.send(json.dumps(frame))
            events = []
            while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
                events.append(json.loads(await asyncio.wait_for(socket.recv(), 10)))
            assert events[-1]["type"] == "response.completed", events[-1]
            previous = events[-1]["response"]["id"]
            turns.append(events)
    texts = ["".join(e["delta"] for e in turn if e["type"] == "response.output_text.delta") for turn in turns]
    assert texts == ["parrot: first turn", "parrot: second turn"]
    # the second turn carried the first one's history to the upstream (it has no sockets of its own)
    last = parrot_pool.upstream.seen[-1].body
    assert next(item.get("content") for item in last["input"] if item.get("role") == "user") in (
        "first turn",
        [{"type": "input_text", "text": "first turn"}],
    )
    assert [record["protocol"] for record in _records(parrot_pool)] == ["responses_ws", "responses_ws"]


@pytest.mark.parametrize("stream", [False, True])
def test_parrot_serves_chat_completions_through_its_dialect(parrot_pool: ParrotPool, stream: bool) -> None:
    before = len(parrot_pool.upstream.seen)
    client = _openai(parrot_pool)
    messages: Any = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "chat with me"}]
    if stream:
        chunks = client.chat.completions.create(
            model="parrot-1", messages=messages, temperature=0.2, stream=True
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    else:
        answer = client.chat.completions.create(model="parrot-1", messages=messages, temperature=0.2)
        text = answer.choices[0].message.content or ""
    assert text == "parrot: chat with me"
    (seen,) = parrot_pool.seen_since(before)
    # the provider's dialect, as data: temperature dropped, store false required, its prelude leads
    assert "temperature" not in seen.body and seen.body["store"] is False
    assert (
        seen.body["instructions"].startswith("You are a parrot.") and "Be brief." in seen.body["instructions"]
    )


def test_parrot_serves_anthropic_messages_with_a_tool_round_trip(parrot_pool: ParrotPool) -> None:
    client = _anthropic(parrot_pool)
    tools: Any = [
        {"name": "get_weather", "description": "Weather of a city.", "input_schema": {"type": "object"}}
    ]
    asked: Any = [{"role": "user", "content": f"call:get_weather {json.dumps(WEATHER)}"}]
    first = client.messages.create(model="parrot-1", max_tokens=100, messages=asked, tools=tools)
    assert first.stop_reason == "tool_use"
    (use,) = [block for block in first.content if block.type == "tool_use"]
    assert use.name == "get_weather" and use.input == WEATHER
    result: Any = [
        *asked,
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]},
    ]
    with client.messages.stream(model="parrot-1", max_tokens=100, messages=result, tools=tools) as stream:
        text = "".join(stream.text_stream)
    assert text == "parrot: tool said sunny"


def test_parrot_refuses_what_its_dialect_refuses_in_the_clients_shape(parrot_pool: ParrotPool) -> None:
    before = len(parrot_pool.upstream.seen)
    with pytest.raises(anthropic.BadRequestError) as refused:
        _anthropic(parrot_pool).messages.create(
            model="parrot-1",
            max_tokens=50,
            messages=[{"role": "user", "content": "hi"}],
            stop_sequences=["x"],
        )
    assert "Stop sequences are not supported by the parrot upstream." in str(refused.value)
    assert parrot_pool.seen_since(before) == []  # refused before any upstream call


def test_parrot_serves_gemini_generate_stream_and_a_function_call(parrot_pool: ParrotPool) -> None:
    client = _gemini(parrot_pool)
    answer = client.models.generate_content(model="parrot-1", contents="gemini says hi")
    assert answer.text == "parrot: gemini says hi"
    streamed = "".join(
        chunk.text or ""
        for chunk in client.models.generate_content_stream(model="parrot-1", contents="in parts")
    )
    assert streamed == "parrot: in parts"
    tool = types.Tool(
        function_declarations=[types.FunctionDeclaration(name="get_weather", description="Weather.")]
    )
    called = client.models.generate_content(
        model="parrot-1",
        contents=f"call:get_weather {json.dumps(WEATHER)}",
        config=types.GenerateContentConfig(
            tools=[tool], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
        ),
    )
    (call,) = called.function_calls or []
    assert call.name == "get_weather" and call.args == WEATHER


def test_parrot_refreshes_a_rejected_token_and_the_call_succeeds(parrot_pool: ParrotPool) -> None:
    refreshes = parrot_pool.upstream.refreshes
    for account in parrot_pool.accounts:
        parrot_pool.upstream.expire_access_token(account)
    answer = _openai(parrot_pool).responses.create(model="parrot-1", input="after expiry")
    assert answer.output_text == "parrot: after expiry"
    assert parrot_pool.upstream.refreshes == refreshes + 1


def test_parrot_upstream_refusal_is_the_clients_fault_and_cools_nothing(parrot_pool: ParrotPool) -> None:
    with parrot_pool.client() as client:
        refused = client.post("/v1/responses", json={"model": "parrot-1", "input": "x", "temperature": 0.3})
        assert refused.status_code == 400 and "temperature" in refused.text
        assert client.post("/v1/responses", json={"model": "parrot-1", "input": "x"}).status_code == 200
    runtime = pool_get(parrot_pool, "/api/accounts/runtime")
    assert all(not account.get("cooldown_until") for account in runtime["accounts"])


def test_parrot_quota_is_read_and_shown_for_its_accounts(parrot_pool: ParrotPool) -> None:
    account = pool_get(parrot_pool, f"/api/accounts/{parrot_pool.account_ids[0]}")
    assert account["provider"] == "parrot", account
    assert parrot_pool.accounts[0].email in json.dumps(account)
    with parrot_pool.client() as client:
        assert (
            client.post("/v1/responses", json={"model": "parrot/parrot-1", "input": "q"}).status_code == 200
        )

    def shown() -> list[dict[str, object]]:
        accounts = pool_get(parrot_pool, "/api/accounts/runtime")["accounts"]
        return [row for item in accounts for row in item["quota"]]

    deadline = time.monotonic() + 10  # the read the call asked for runs in the background (QUOTA-1)
    while not (rows := shown()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(row["window"] == "5h" and row["used_percent"] == 12.5 and row["main"] for row in rows), rows
