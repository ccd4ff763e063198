"""Metered Gemini API keys (provider ``gemini``) in the pool: PAID-1 and PAID-4 on a real gateway with
the simulator's Gemini API (``/gemini``), the google-genai SDK and the hub's other protocols."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_pool import Pool, recorded

from sublane_sim import Behaviour

MODEL = "gemini-2.5-flash"
ANSWER = "Hello from a Gemini key"
BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}


def metered_pool(make_pool: Callable[..., Pool], **settings: Any) -> Pool:
    """A gateway whose default group holds one Gemini API key (its base URL from
    ``SUBLANE_GEMINI_BASE_URL``, which the simulator's settings point at ``/gemini``)."""
    pool = make_pool(provider="gemini", **settings)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=4))
    return pool


def gemini_client(pool: Pool) -> httpx.Client:
    return pool.gateway.client(headers={"x-goog-api-key": pool.key})


def _sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def _account(pool: Pool, account_id: int) -> dict[str, Any]:
    answer: dict[str, Any] = pool.admin.get(f"/api/accounts/{account_id}").json()
    return answer


# -- PAID-1: import ---------------------------------------------------------------------------------


def test_paid_1_gemini_key_import_is_checked_and_metered(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    account = pool.sim.create_account("gemini")
    body = {
        "provider": "gemini",
        "name": "gemini-key",
        "credentials": {"api_key": account.api_key, "base_url": pool.sim.gemini_base_url},
        "group_ids": [1],
    }
    created = pool.admin.post("/api/accounts/import", json=body)
    assert created.status_code == 201, created.text
    shown = _account(pool, created.json()["id"])
    assert shown["billing"] == "metered" and shown["provider"] == "gemini"
    assert account.api_key not in json.dumps(shown)
    listed = [r for r in pool.sim.requests(endpoint="gemini.models") if r.account_id == account.id]
    assert listed and listed[0].headers["x-goog-api-key"] == account.api_key  # checked by listing models
    assert _account(pool, pool.account_ids[0])["billing"] == "metered"


@pytest.mark.parametrize("key", ["AIzaSyWrongWrongWrongWrongWrongWrong123", "revoked"])
def test_paid_1_gemini_refused_key_is_400_invalid_credentials_and_nothing_stored(
    make_pool: Callable[..., Pool], key: str
) -> None:
    pool = metered_pool(make_pool)
    if key == "revoked":
        revoked = pool.sim.create_account("gemini")
        pool.sim.revoke_api_key(revoked.id)
        key = revoked.api_key
    before = pool.admin.get("/api/accounts").json()
    body = {"provider": "gemini", "name": "bad", "credentials": {"api_key": key}, "group_ids": [1]}
    refused = pool.admin.post("/api/accounts/import", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_credentials"
    assert key not in refused.text
    assert pool.admin.get("/api/accounts").json() == before
    assert pool.sim.requests(endpoint="gemini.models")[-1].status == 400  # the real API's answer


# -- PAID-1: the Gemini protocol, native ------------------------------------------------------------


def test_paid_1_gemini_generate_content_served_by_a_metered_key(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    response = gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["candidates"][0]["content"]["parts"][0]["text"] == ANSWER
    record = pool.finished[-1]
    assert (record.provider, record.protocol, record.outcome) == ("gemini", "gemini", "success")
    assert record.input_tokens and record.output_tokens
    sent = pool.sim.requests(endpoint="gemini.generateContent")[-1]
    assert sent.path == f"/gemini/v1beta/models/{MODEL}:generateContent"
    assert sent.headers["x-goog-api-key"] == pool.sim_accounts[0].api_key
    assert sent.body == BODY  # unwrapped: the model is in the path, nothing added
    assert pool.key not in json.dumps(sent.headers)  # the client's SubLane key stays home


def test_paid_1_gemini_stream_and_function_call_native(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    client = gemini_client(pool)
    sse = client.post(f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", json=BODY)
    assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
    chunks = _sse(sse.text)
    assert len(chunks) > 2 and "response" not in chunks[0]
    assert (
        "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"]) == ANSWER
    )
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] > 0
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True))
    tools = [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "object"}}]}]
    called = client.post(f"/v1beta/models/{MODEL}:generateContent", json={**BODY, "tools": tools})
    assert called.status_code == 200, called.text
    parts = called.json()["candidates"][0]["content"]["parts"]
    assert [p["functionCall"]["name"] for p in parts if "functionCall" in p] == ["get_weather"]
    assert [r.provider for r in pool.finished] == ["gemini", "gemini"]


def test_paid_1_gemini_count_tokens(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    body = {**BODY, "systemInstruction": {"parts": [{"text": "be brief"}]}}
    counted = gemini_client(pool).post(f"/v1beta/models/{MODEL}:countTokens", json=body)
    assert counted.status_code == 200, counted.text
    assert counted.json()["totalTokens"] > 0
    sent = pool.sim.requests(endpoint="gemini.countTokens")[-1].body
    assert sent["generateContentRequest"]["model"] == f"models/{MODEL}"  # the real API's only shape for this


def test_paid_1_gemini_usage_reports_implicitly_cached_tokens(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    client = gemini_client(pool)
    long = {"contents": [{"role": "user", "parts": [{"text": "a long shared prefix " * 400}]}]}
    for _ in range(2):  # over implicit caching's floor of 1024 tokens
        assert client.post(f"/v1beta/models/{MODEL}:generateContent", json=long).status_code == 200
    first, second = pool.finished
    assert first.cached_tokens == 0  # the API reports the figure: a miss is 0, not unknown
    assert second.cached_tokens and second.input_tokens and second.cached_tokens <= second.input_tokens


def test_paid_1_gemini_key_travels_sealed_in_a_bundle(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    passphrase = "a long bundle passphrase"
    exported = pool.admin.post("/api/accounts/export", json={"passphrase": passphrase})
    assert exported.status_code == 200
    assert pool.sim_accounts[0].api_key.encode() not in exported.content
    assert pool.admin.delete(f"/api/accounts/{pool.account_ids[0]}").status_code == 204
    imported = pool.admin.post(
        "/api/accounts/import-bundle",
        files={"file": ("accounts.bundle", exported.content, "application/octet-stream")},
        data={"passphrase": passphrase},
        headers={"origin": pool.gateway.url},
    )
    assert imported.status_code == 200, imported.text
    pool.settle()
    served = gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert served.status_code == 200, served.text
    (account,) = pool.admin.get("/api/accounts").json()["items"]
    assert account["billing"] == "metered" and account["provider"] == "gemini"


# -- PAID-1: every other protocol, through the hub --------------------------------------------------


def test_paid_1_gemini_key_serves_chat_completions_and_responses(make_pool: Callable[..., Pool]) -> None:
    openai = pytest.importorskip("openai")
    pool = metered_pool(make_pool)
    with openai.OpenAI(base_url=f"{pool.gateway.url}/v1", api_key=pool.key, max_retries=0) as sdk:
        chat = sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert chat.choices[0].message.content == ANSWER
        streamed = sdk.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == ANSWER
        answer = sdk.responses.create(model=MODEL, input="hi")
        assert answer.output_text == ANSWER
        pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True))
        tool = {
            "type": "function",
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
        with sdk.responses.stream(model=MODEL, input="weather?", tools=[tool]) as stream:  # type: ignore[list-item]
            final = stream.get_final_response()
        assert [item.type for item in final.output if item.type == "function_call"] == ["function_call"]
    served = pool.sim.requests(endpoint="gemini.streamGenerateContent") + pool.sim.requests(
        endpoint="gemini.generateContent"
    )
    assert len(served) == 4
    assert {(r.provider, r.outcome) for r in pool.finished} == {("gemini", "success")}
    assert {r.protocol for r in pool.finished} == {"chat_completions", "responses"}


def test_paid_1_gemini_key_serves_anthropic_messages_with_a_tool_round_trip(
    make_pool: Callable[..., Pool],
) -> None:
    anthropic = pytest.importorskip("anthropic")
    pool = metered_pool(make_pool)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True))
    tools = [{"name": "get_weather", "description": "w", "input_schema": {"type": "object"}}]
    with anthropic.Anthropic(base_url=pool.gateway.url, api_key=pool.key, max_retries=0) as sdk:
        first = sdk.messages.create(
            model=MODEL, max_tokens=64, tools=tools, messages=[{"role": "user", "content": "weather?"}]
        )
        use = next(block for block in first.content if block.type == "tool_use")
        assert use.name == "get_weather" and first.stop_reason == "tool_use"
        messages: list[Any] = [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [block.model_dump() for block in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]},
        ]
        with sdk.messages.stream(model=MODEL, max_tokens=64, tools=tools, messages=messages) as stream:
            text = "".join(stream.text_stream)
    assert text == ANSWER
    last = pool.sim.requests(endpoint="gemini.streamGenerateContent")[-1].body
    assert "functionResponse" in json.dumps(last["contents"])  # the tool result reached the key
    assert {(r.provider, r.protocol) for r in pool.finished} == {("gemini", "messages")}


def test_paid_1_google_genai_sdk_served_by_a_gemini_key(make_pool: Callable[..., Pool]) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    pool = metered_pool(make_pool)
    client = genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))
    answer = client.models.generate_content(model=MODEL, contents="say hi")
    assert answer.text == ANSWER
    assert answer.usage_metadata is not None and answer.usage_metadata.prompt_token_count
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="say hi"))
    assert len(chunks) > 1 and "".join(chunk.text or "" for chunk in chunks) == ANSWER
    assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert [(r.provider, r.outcome) for r in pool.finished] == [("gemini", "success")] * 2


# -- PAID-4: the key's own limits -------------------------------------------------------------------


def _runtime(pool: Pool, account_id: int) -> dict[str, Any]:
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    found: dict[str, Any] = next(account for account in accounts if account["id"] == account_id)
    return found


def test_paid_4_gemini_429_cools_the_key_for_its_retry_delay(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="gemini", accounts=2)
    limited, other = pool.sim_accounts
    pool.sim.script(limited.id, Behaviour.error(429, retry_delay="120s"))
    pool.sim.set_default(limited.id, Behaviour.ok(text=ANSWER))
    pool.sim.set_default(other.id, Behaviour.ok(text=ANSWER))
    client = gemini_client(pool)
    first = client.post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    if not pool.sim.requests(endpoint="gemini.generateContent", account_id=limited.id):
        # the scheduler picked the other key first: send until the limited one is tried
        first = client.post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert first.status_code == 200, first.text  # the other key served it
    limited_id = pool.account_ids[0]
    cooldown = pool.runtime.scheduler.cooldowns.active(limited_id)
    assert cooldown is not None
    now = pool.gateway.clock.time()
    assert 110 <= cooldown.until - now <= 121  # RetryInfo's retryDelay, not a default
    tried = len(pool.sim.requests(account_id=limited.id, endpoint="gemini.generateContent"))
    for _ in range(3):
        assert client.post(f"/v1beta/models/{MODEL}:generateContent", json=BODY).status_code == 200
    assert len(pool.sim.requests(account_id=limited.id, endpoint="gemini.generateContent")) == tried
    shown = _runtime(pool, limited_id)
    assert shown["state"] != "ready" and shown["cooldown_until"] == pytest.approx(cooldown.until)


@pytest.mark.parametrize("refusal", ["api_key_invalid", "unauthenticated"])
def test_paid_4_gemini_refused_key_marks_the_account_unauthorized_without_refresh(
    make_pool: Callable[..., Pool], refusal: str
) -> None:
    pool = metered_pool(make_pool)
    account = pool.sim_accounts[0]
    if refusal == "api_key_invalid":
        pool.sim.revoke_api_key(account.id)  # deleted by its owner: the real API's 400 API_KEY_INVALID
    else:
        pool.sim.script(account.id, Behaviour.error(401))
    response = gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert response.status_code >= 400 and account.api_key not in response.text
    shown = _account(pool, pool.account_ids[0])
    assert (shown["auth_state"], shown["auth_error"]) == ("reauth_required", "unauthorized")
    assert not [r for r in pool.sim.requests() if r.endpoint.endswith(".token")]  # no refresh exists
    again = gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert again.status_code >= 400
    assert len(pool.sim.requests(endpoint="gemini.generateContent")) == 1  # not tried again


def test_paid_4_gemini_sends_no_rate_limit_headers_so_no_windows(make_pool: Callable[..., Pool]) -> None:
    pool = metered_pool(make_pool)
    response = gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert response.status_code == 200
    shown = _runtime(pool, pool.account_ids[0])
    assert shown["state"] == "ready"
    assert shown["quota"] == []  # nothing made up: the Gemini API reports no limits on answers


# -- PAID-1: the key stays secret -------------------------------------------------------------------


def test_paid_1_gemini_key_never_shown_logged_recorded_or_exported(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    pool = metered_pool(make_pool)
    key = pool.sim_accounts[0].api_key
    gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(400, error_message=f"bad request for {key}"))
    gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    recorded(pool, 2)
    seen = [
        pool.admin.get("/api/accounts").text,
        pool.admin.get(f"/api/accounts/{pool.account_ids[0]}").text,
        pool.admin.get("/api/accounts/runtime").text,
        pool.admin.get("/api/requests").text,
        pool.admin.get("/api/audit").text,
        pool.gateway.client().get("/metrics").text,
        caplog.text,
    ]
    for text in seen:
        assert key not in text


# -- the real clients -------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.slow
def test_paid_1_gemini_cli_served_by_a_metered_gemini_key(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    from test_real_clients import _client, _gemini

    _client("gemini")
    pool = metered_pool(make_pool)
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", MODEL)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [r for r in pool.finished if r.protocol == "gemini" and r.outcome == "success"]
    assert served and {r.provider for r in served} == {"gemini"}
    upstream = pool.sim.requests(endpoint="gemini.streamGenerateContent")
    assert upstream and upstream[-1].headers["x-goog-api-key"] == pool.sim_accounts[0].api_key
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.e2e
@pytest.mark.slow
def test_paid_1_claude_code_served_by_a_metered_gemini_key(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    """Translated: Claude Code speaks Messages, the key the Gemini API; a tool round trip."""
    from test_real_clients import _claude, _client

    _client("claude")
    pool = metered_pool(make_pool)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    run = _claude(pool, tmp_path, "-p", "--model", MODEL, "say hi")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    served = [r for r in pool.finished if r.outcome == "success"]
    assert len(served) >= 2 and {(r.provider, r.protocol) for r in served} == {("gemini", "messages")}
    bodies = [json.dumps(r.body) for r in pool.sim.requests(account_id=pool.sim_accounts[0].id)]
    assert any("functionResponse" in body for body in bodies)
    assert pool.runtime.leases.total_in_flight() == 0


def test_paid_4_gemini_invalid_argument_is_the_requests_fault_not_the_keys(
    make_pool: Callable[..., Pool],
) -> None:
    pool = metered_pool(make_pool)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(400, error_message="Invalid value at 'x'."))
    refused = gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY)
    assert refused.status_code == 400 and refused.json()["error"]["status"] == "INVALID_ARGUMENT"
    shown = _runtime(pool, pool.account_ids[0])
    assert (shown["state"], shown["auth_state"], shown["cooldown_until"]) == ("ready", "ok", None)
    assert gemini_client(pool).post(f"/v1beta/models/{MODEL}:generateContent", json=BODY).status_code == 200


def test_paid_1_gemini_key_counts_tokens_for_a_messages_client(make_pool: Callable[..., Pool]) -> None:
    anthropic = pytest.importorskip("anthropic")
    pool = metered_pool(make_pool)
    with anthropic.Anthropic(base_url=pool.gateway.url, api_key=pool.key, max_retries=0) as sdk:
        counted = sdk.messages.count_tokens(
            model=MODEL, system="be brief", messages=[{"role": "user", "content": "hi"}]
        )
    assert counted.input_tokens > 0
    sent = pool.sim.requests(endpoint="gemini.countTokens")
    assert sent and sent[-1].status == 200
