"""PAID-1 and PAID-4 for the ``openai`` provider: OpenAI API keys as metered pool members, served by
the upstream simulator's OpenAI API (``/openai/v1``) through a real gateway."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from gateway_pool import Pool
from google import genai
from google.genai import types

from sublane_sim import Behaviour, Simulator

ANSWER = "Hello from a metered key"
METRICS_TOKEN = "metrics-token-for-tests"
TOOL = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}

_clients: list[openai.OpenAI] = []


def _sdk(pool: Pool) -> openai.OpenAI:
    client = openai.OpenAI(base_url=f"{pool.gateway.url}/v1", api_key=pool.key, max_retries=0, timeout=30)
    _clients.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def _import(pool: Pool, credentials: dict[str, Any], name: str = "openai-key") -> Any:
    body = {"provider": "openai", "name": name, "credentials": credentials, "group_ids": [1]}
    return pool.admin.post("/api/accounts/import", json=body)


def test_paid_1_openai_key_checked_before_import_and_account_metered(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    # the gateway's default base URL leads nowhere: the account's own base_url must be the one used
    pool = make_pool(accounts=0, provider="openai", openai_base_url="http://127.0.0.1:9/v1")
    account = sim.create_account("openai")
    wrong = _import(pool, {"api_key": "sk-proj-wrongwrongwrong1234", "base_url": sim.openai_base_url})
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_credentials"
    assert "wrongwrong" not in wrong.text
    sim.update_account(account.id, api_key_revoked=True)
    revoked = _import(pool, {"api_key": account.api_key, "base_url": sim.openai_base_url})
    assert revoked.status_code == 400 and revoked.json()["error"]["code"] == "invalid_credentials"
    for bad in ({"api_key": 5}, {"api_key": account.api_key, "base_url": "ftp://127.0.0.1/v1"}):
        refused = _import(pool, bad)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_credentials_file"
        assert account.api_key not in refused.text
    assert pool.admin.get("/api/accounts").json()["items"] == []  # nothing stored
    sim.update_account(account.id, api_key_revoked=False)
    imported = _import(pool, {"api_key": account.api_key, "base_url": sim.openai_base_url + "/"})
    assert imported.status_code == 201, imported.text
    shown = pool.admin.get(f"/api/accounts/{imported.json()['id']}")
    assert shown.json()["billing"] == "metered" and shown.json()["provider"] == "openai"
    listed = pool.admin.get("/api/accounts")
    audit = pool.admin.get("/api/audit")
    for answer in (imported, shown, listed, audit):
        assert account.api_key not in answer.text
    checks = sim.requests(endpoint="openai.models")
    assert checks and checks[-1].headers["authorization"] == f"Bearer {account.api_key}"


def test_paid_1_openai_responses_stream_and_json_through_the_sdk(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="openai")
    key = pool.sim_accounts[0].api_key
    client = _sdk(pool)
    with client.responses.stream(model="gpt-5", input="Say hi", store=False) as stream:
        text = "".join(event.delta for event in stream if event.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text and final.status == "completed" and final.output_text == text
    answer = client.responses.create(model="gpt-5", input="Say hi again")
    assert answer.status == "completed" and answer.output_text
    assert answer.usage is not None and answer.usage.input_tokens > 0
    sent = pool.sim.requests(endpoint="openai.responses")
    assert [record.body["stream"] for record in sent] == [True, False]
    assert all(record.headers["authorization"] == f"Bearer {key}" for record in sent)
    assert all(record.path == "/openai/v1/responses" for record in sent)
    assert [finished.outcome for finished in pool.finished] == ["success", "success"]
    assert json.dumps(pool.admin.get("/api/requests").json()).find(key) == -1


def _answering(pool: Pool, **options: Any) -> Pool:
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=4, **options))
    return pool


def _last_sent(pool: Pool) -> dict[str, Any]:
    body: dict[str, Any] = pool.sim.requests(endpoint="openai.responses")[-1].body
    return body


def test_paid_1_openai_native_tool_call_and_compaction(make_pool: Callable[..., Pool]) -> None:
    pool = _answering(make_pool(provider="openai"), tool_call=True)
    tools = [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": TOOL}]
    answer = _sdk(pool).responses.create(model="gpt-5", input="read a.txt", tools=tools)  # type: ignore[arg-type]
    calls = [item for item in answer.output if item.type == "function_call"]
    assert calls and calls[0].name == "read_file" and json.loads(calls[0].arguments)["path"]
    body = {"model": "gpt-5", "input": [{"type": "message", "role": "user", "content": "a long talk"}]}
    compacted = pool.client().post("/v1/responses/compact", json=body)
    assert compacted.status_code == 200, compacted.text
    assert compacted.json()["output"][-1]["type"] == "compaction"
    sent = pool.sim.requests(endpoint="openai.compact")
    assert len(sent) == 1 and sent[0].path == "/openai/v1/responses/compact" and "stream" not in sent[0].body
    # the API's own 400 is the request's fault: relayed in the client's shape, the key stays ready
    bad = pool.client().post("/v1/responses", json={"model": "gpt-5", "input": "hi", "n": 2})
    assert bad.status_code == 400 and bad.json()["error"]["message"] == "Unknown parameter: 'n'."
    assert _runtime(pool, pool.account_ids[0])["state"] == "ready"


#: What a Codex CLI 0.171 sends on ``POST /v1/responses`` (shaped as in the captures of
#: ``/work/shared/real-clients``): its headers and top-level fields, some of them only the ChatGPT
#: backend takes.
CODEX_HEADERS = {
    "originator": "codex_exec",
    "session_id": "thread-1",
    "session-id": "thread-1",
    "thread-id": "thread-1",
    "chatgpt-account-id": "acct-of-the-client",
    "x-client-request-id": "thread-1",
    "x-codex-window-id": "thread-1:0",
    "x-codex-turn-metadata": '{"installation_id":"inst-1","session_id":"thread-1"}',
    "x-codex-beta-features": "remote_compaction_v2",
    "x-codex-installation-id": "inst-1",
}
CODEX_CLIENT_METADATA = {
    "x-codex-installation-id": "inst-1",
    "session_id": "thread-1",
    "thread_id": "thread-1",
    "turn_id": "turn-1",
    "x-codex-window-id": "thread-1:0",
}


def test_paid_1_codex_cli_fields_the_openai_api_refuses_are_not_sent(make_pool: Callable[..., Pool]) -> None:
    """A Codex CLI's turn and compaction on an API key: the fields the public API does not take
    (``client_metadata``, a prewarm's ``generate``, the compaction's turn settings) are left out —
    the API (and the simulator, as strict) answers 400 ``unknown_parameter`` to them — and what the
    call needs (``prompt_cache_key``, ``store``, ``include``, ``reasoning``, ``tools``…) is kept; no
    Codex header (the client's installation, session, account) reaches the key's owner."""
    pool = _answering(make_pool(provider="openai"))
    tools = [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": TOOL}]
    turn = {
        "model": "gpt-5",
        "instructions": "You are Codex.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "thread-1",
        "client_metadata": CODEX_CLIENT_METADATA,
    }
    with pool.client().stream("POST", "/v1/responses", json=turn, headers=CODEX_HEADERS) as answer:
        streamed = answer.read().decode()
    assert answer.status_code == 200, streamed
    assert "response.completed" in streamed and ANSWER.split()[0] in streamed
    compaction = {key: value for key, value in turn.items() if key != "stream"}
    compacted = pool.client().post("/v1/responses/compact", json=compaction, headers=CODEX_HEADERS)
    assert compacted.status_code == 200, compacted.text
    sent_turn = pool.sim.requests(endpoint="openai.responses")[-1]
    assert sent_turn.status == 200
    assert {key: sent_turn.body[key] for key in ("prompt_cache_key", "store", "include", "reasoning")} == {
        "prompt_cache_key": "thread-1",
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"summary": "auto"},
    }
    assert sent_turn.body["tools"] == tools and sent_turn.body["instructions"] == "You are Codex."
    assert "client_metadata" not in sent_turn.body
    sent_compaction = pool.sim.requests(endpoint="openai.compact")[-1]
    assert set(sent_compaction.body) == {"model", "instructions", "input", "prompt_cache_key"}
    for record in (sent_turn, sent_compaction):
        leaked = {name for name in record.headers if name.lower() in CODEX_HEADERS}
        assert leaked == set() and not any(name.lower().startswith("x-codex") for name in record.headers)
        assert "inst-1" not in json.dumps(record.body) and "acct-of-the-client" not in str(record.headers)
    assert [finished.outcome for finished in pool.finished] == ["success", "success"]
    assert _runtime(pool, pool.account_ids[0])["state"] == "ready"


def test_paid_1_a_field_the_openai_api_does_not_take_is_refused_by_it_naming_the_field(
    make_pool: Callable[..., Pool],
) -> None:
    """A native request's field the API does not know is sent as written (a parameter the API adds
    after a release must reach it), so the API refuses it: the client gets that 400 with the
    field named in ``param`` as the OpenAI SDK reads it, and the key is not blamed."""
    pool = _answering(make_pool(provider="openai"))
    with pytest.raises(openai.BadRequestError) as refused:
        _sdk(pool).responses.create(model="gpt-5", input="hi", extra_body={"made_up_option": True})
    assert refused.value.status_code == 400
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "unknown_parameter", error
    assert error["param"] == "made_up_option"
    assert pool.sim.requests(endpoint="openai.responses")[-1].body["made_up_option"] is True
    assert _runtime(pool, pool.account_ids[0])["state"] == "ready"


def test_paid_1_openai_chat_completions_through_the_hub(make_pool: Callable[..., Pool]) -> None:
    pool = _answering(make_pool(provider="openai"))
    client = _sdk(pool)
    completion = client.chat.completions.create(
        model="gpt-5",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    )
    assert completion.choices[0].message.content == ANSWER
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    sent = _last_sent(pool)
    assert sent["instructions"] == "Be brief." and sent["store"] is False and sent["stream"] is True
    chunks = list(
        client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
    )
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == ANSWER
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True, deltas=2))
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": TOOL}}]
    called = client.chat.completions.create(
        model="gpt-5",
        messages=[{"role": "user", "content": "read a.txt"}],
        tools=tools,  # type: ignore[arg-type]
    )
    call = (called.choices[0].message.tool_calls or [])[0]
    assert call.function.name == "read_file" and called.choices[0].finish_reason == "tool_calls"  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError) as stop:  # the Responses API has no stop sequences
        client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "Hi"}], stop=["x"]
        )
    assert "Stop sequences" in str(stop.value)
    assert {(record.provider, record.protocol) for record in pool.finished} == {
        ("openai", "chat_completions")
    }


def test_paid_1_openai_messages_through_the_hub(make_pool: Callable[..., Pool]) -> None:
    pool = _answering(make_pool(provider="openai"))
    with anthropic.Anthropic(
        base_url=pool.gateway.url, api_key=pool.key, max_retries=0, timeout=30
    ) as claude:
        message = claude.messages.create(
            model="gpt-5", max_tokens=256, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.content[0].type == "text" and message.content[0].text == ANSWER
        pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True, deltas=2))
        tools = [{"name": "read_file", "description": "Read a file", "input_schema": TOOL}]
        with claude.messages.stream(
            model="gpt-5",
            max_tokens=256,
            messages=[{"role": "user", "content": "read a.txt"}],
            tools=tools,  # type: ignore[arg-type]
        ) as stream:
            final = stream.get_final_message()
    assert [block.type for block in final.content][-1] == "tool_use" and final.stop_reason == "tool_use"
    assert _last_sent(pool)["tools"][0]["name"] == "read_file"
    assert {(record.provider, record.protocol) for record in pool.finished} == {("openai", "messages")}


def test_paid_1_openai_gemini_through_the_hub(make_pool: Callable[..., Pool]) -> None:
    pool = _answering(make_pool(provider="openai"))
    client = genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))
    answer = client.models.generate_content(model="gpt-5", contents="say hi")
    assert answer.text == ANSWER
    chunks = list(client.models.generate_content_stream(model="gpt-5", contents="say hi"))
    assert "".join(chunk.text or "" for chunk in chunks) == ANSWER
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True, deltas=2))
    read_file = types.FunctionDeclaration(name="read_file", parameters_json_schema=TOOL)
    called = client.models.generate_content(
        model="gpt-5",
        contents="read a.txt",
        config=types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=[read_file])],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        ),
    )
    assert called.function_calls and called.function_calls[0].name == "read_file"
    assert {(record.provider, record.protocol) for record in pool.finished} == {("openai", "gemini")}


def _runtime(pool: Pool, account_id: int) -> dict[str, Any]:
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    found: dict[str, Any] = next(account for account in accounts if account["id"] == account_id)
    return found


def _ask(pool: Pool, text: str) -> Any:
    return pool.client().post("/v1/responses", json={"model": "gpt-5", "input": text})


def test_paid_4_openai_rate_limit_headers_are_quota_and_a_spent_key_is_steered_around(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2, provider="openai")
    first, second = pool.sim_accounts
    for account in pool.sim_accounts:  # the last request the minute allows: remaining 0 after it
        pool.sim.set_quota(account.id, "requests", used_percent=99.99, reset_in_s=40)
    assert _ask(pool, "the last one").status_code == 200
    spent_id = pool.finished[-1].account_id
    spent = _runtime(pool, spent_id)
    deadline = time.monotonic() + 5
    while not spent["quota"] and time.monotonic() < deadline:  # the observation is stored after the answer
        time.sleep(0.02)
        spent = _runtime(pool, spent_id)
    windows = {window["window"]: window for window in spent["quota"]}
    assert set(windows) == {"requests", "tokens"} and spent["state"] == "quota_exhausted"
    assert windows["requests"]["limit_reached"] and windows["requests"]["used_percent"] == 100
    assert 30 < windows["requests"]["resets_at"] - windows["requests"]["observed_at"] <= 40
    assert not windows["tokens"]["limit_reached"] and windows["tokens"]["plan"] == "api_key"
    for account in (first, second):
        pool.sim.set_quota(account.id, "requests", used_percent=0)
    for number in range(3):  # new conversations go to the other key until the window resets
        assert _ask(pool, f"new talk {number}").status_code == 200
        assert pool.finished[-1].account_id != spent_id


def test_paid_4_openai_429_cools_the_key_for_its_retry_after(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2, provider="openai", wait_timeout_s=1)
    limited, exhausted = pool.sim_accounts
    pool.sim.script(limited.id, Behaviour.error(429, retry_after="17"))
    pool.sim.script(exhausted.id, Behaviour.error(429, error_code="insufficient_quota"))
    answer = _ask(pool, "hi")
    assert answer.status_code in (403, 429), answer.text  # neither key could serve
    cooled = _runtime(pool, pool.account_ids[0])
    assert cooled["state"] == "cooling" and cooled["cooldown_reason"] == "rate_limit_exceeded"
    assert 14 < cooled["cooldown_until"] - pool.gateway.clock.time() <= 17
    used_up = _runtime(pool, pool.account_ids[1])
    assert used_up["state"] == "quota_exhausted" and used_up["cooldown_until"] is None
    assert any(window["limit_reached"] for window in used_up["quota"])


def test_paid_4_openai_401_marks_the_key_unauthorized_and_no_secret_leaks(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool(provider="openai", metrics_token=METRICS_TOKEN)
    account = pool.sim_accounts[0]
    assert _ask(pool, "hi").status_code == 200
    pool.sim.update_account(account.id, api_key_revoked=True)
    refused = _ask(pool, "hi again")
    assert refused.status_code in (401, 503), refused.text
    shown = pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").json()
    assert shown["auth_state"] == "reauth_required" and shown["auth_error"] == "unauthorized"
    assert _runtime(pool, pool.account_ids[0])["auth_state"] == "reauth_required"
    # no refresh exists: the simulator saw the models check, one answered call and one refused call
    endpoints = [record.endpoint for record in pool.sim.requests(account_id=account.id)]
    assert endpoints.count("openai.responses") == 2 and not [e for e in endpoints if "token" in e]
    assert account.api_key[-4:] not in refused.text
    metrics = pool.gateway.client().get("/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    answers = [
        refused.text,
        metrics.text,
        pool.admin.get("/api/requests").text,
        pool.admin.get("/api/audit").text,
        pool.admin.get("/api/accounts").text,
        pool.admin.get("/api/accounts/runtime").text,
    ]
    logged = caplog.text + "".join(record.getMessage() for record in caplog.records)
    for text in (*answers, logged):
        assert account.api_key not in text and account.api_key[7:] not in text
