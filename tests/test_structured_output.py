"""Structured output across every client protocol and upstream (XLAT-2, XLAT-3): a JSON Schema is
carried to each upstream in its own form; JSON mode without a schema is carried where the upstream
has it and refused with 400 ``unsupported_for_provider`` (naming the field) where it has not —
never silently dropped. One row of the table in ``docs/routing.md`` a case."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from gateway_pool import Pool
from test_bad_input import code_of, model_calls

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
MODELS = {"codex": "gpt-5-codex", "claude": "claude-sonnet-5-5", "antigravity": "gemini-3-flash"}
CHAT = [{"role": "user", "content": "Where is the Eiffel tower? Answer in JSON."}]
GEMINI_CONTENTS = [{"role": "user", "parts": [{"text": "Where is the Eiffel tower?"}]}]


def _request(client: str, model: str, schema: bool) -> tuple[str, dict[str, Any], str]:
    """(path, body, error shape) of a structured-output request in the client's protocol."""
    if client == "responses":
        fmt = (
            {"type": "json_schema", "name": "place", "schema": SCHEMA} if schema else {"type": "json_object"}
        )
        return "/v1/responses", {"model": model, "input": "Where?", "text": {"format": fmt}}, "openai"
    if client == "chat":
        fmt = (
            {"type": "json_schema", "json_schema": {"name": "place", "schema": SCHEMA}}
            if schema
            else {"type": "json_object"}
        )
        return "/v1/chat/completions", {"model": model, "messages": CHAT, "response_format": fmt}, "openai"
    if client == "messages":
        assert schema  # Messages has no JSON mode without a schema
        body = {
            "model": model,
            "max_tokens": 256,
            "messages": CHAT,
            "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        }
        return "/v1/messages", body, "anthropic"
    config: dict[str, Any] = {"responseMimeType": "application/json"}
    if schema:
        config["responseJsonSchema"] = SCHEMA
    body = {"contents": GEMINI_CONTENTS, "generationConfig": config}
    return f"/v1beta/models/{model}:generateContent", body, "google"


def _sent(pool: Pool, provider: str) -> dict[str, Any]:
    """The body of the last model call the provider's account received (unwrapped for Antigravity)."""
    index = [account.provider for account in pool.sim_accounts].index(provider)
    calls = [r for r in pool.sim.requests(account_id=pool.sim_accounts[index].id) if r.method == "POST"]
    calls = [r for r in calls if isinstance(r.body, dict) and ("model" in r.body or "request" in r.body)]
    body: dict[str, Any] = calls[-1].body
    return body["request"] if provider == "antigravity" else body


def _schema_upstream(provider: str, sent: dict[str, Any]) -> Any:
    if provider == "codex":
        fmt = sent["text"]["format"]
        assert fmt["type"] == "json_schema"
        return fmt["schema"]
    if provider == "claude":
        fmt = sent["output_config"]["format"]
        assert fmt["type"] == "json_schema"
        return fmt["schema"]
    config = sent["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    return config.get("responseJsonSchema") or config.get("responseSchema")


@pytest.fixture
def pool(make_pool: Callable[..., Pool]) -> Pool:
    pool = make_pool(provider="codex")
    pool.add_account("claude", "claude-1")
    pool.add_account("antigravity", "antigravity-1")
    return pool


@pytest.mark.parametrize("provider", ["codex", "claude", "antigravity"])
@pytest.mark.parametrize("client", ["responses", "chat", "messages", "gemini"])
def test_xlat_2_a_json_schema_is_carried_to_every_upstream(pool: Pool, client: str, provider: str) -> None:
    path, body, _shape = _request(client, f"{provider}/{MODELS[provider]}", schema=True)
    headers = {"x-goog-api-key": pool.key} if client == "gemini" else {}
    answer = pool.client().post(path, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    carried = _schema_upstream(provider, _sent(pool, provider))
    assert carried is not None and "city" in str(carried), carried


@pytest.mark.parametrize(("provider", "carried"), [("codex", True), ("claude", False), ("antigravity", True)])
@pytest.mark.parametrize("client", ["responses", "chat", "gemini"])
def test_xlat_3_json_mode_without_a_schema_is_carried_or_refused_never_dropped(
    pool: Pool, client: str, provider: str, carried: bool
) -> None:
    path, body, shape = _request(client, f"{provider}/{MODELS[provider]}", schema=False)
    headers = {"x-goog-api-key": pool.key} if client == "gemini" else {}
    before = model_calls(pool)
    answer = pool.client().post(path, json=body, headers=headers)
    if carried:
        assert answer.status_code == 200, answer.text
        sent = _sent(pool, provider)
        if provider == "codex":
            assert sent["text"]["format"]["type"] == "json_object"
        else:
            assert sent["generationConfig"]["responseMimeType"] == "application/json"
        return
    assert answer.status_code == 400, answer.text
    assert code_of(answer, shape) == "unsupported_for_provider"
    assert (
        "text.format" in answer.text or "response_format" in answer.text or "responseMimeType" in answer.text
    )
    assert model_calls(pool) == before  # refused before any upstream call


def test_xlat_3_the_openai_sdk_reads_the_refusal(pool: Pool) -> None:
    client = openai.OpenAI(
        base_url=f"{pool.gateway.url}/v1", api_key=pool.key, max_retries=0, http_client=pool.gateway.client()
    )
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="claude/claude-sonnet-5-5", messages=CHAT, response_format={"type": "json_object"}
        )
    assert refused.value.code == "unsupported_for_provider"
    structured = client.responses.create(
        model="claude/claude-sonnet-5-5",
        input="Where?",
        text={"format": {"type": "json_schema", "name": "place", "schema": SCHEMA}},
    )
    assert structured.output_text is not None
    assert _sent(pool, "claude")["output_config"]["format"]["schema"] == SCHEMA


@pytest.mark.parametrize("provider", ["codex", "claude", "antigravity"])
def test_xlat_2_chat_sampling_output_cap_and_stop_reach_every_upstream_that_takes_them(
    pool: Pool, provider: str
) -> None:
    body = {
        "model": f"{provider}/{MODELS[provider]}",
        "messages": CHAT,
        "temperature": 0.3,
        "top_p": 0.8,
        "max_tokens": 321,
    }
    assert pool.client().post("/v1/chat/completions", json=body).status_code == 200
    sent = _sent(pool, provider)
    if provider == "codex":  # the Codex backend refuses these: its side drops them
        assert not {"temperature", "top_p", "max_output_tokens"} & set(sent)
    elif provider == "claude":
        assert sent["temperature"] == 0.3 and sent["max_tokens"] == 321
    else:
        config = sent["generationConfig"]
        assert (config["temperature"], config["topP"], config["maxOutputTokens"]) == (0.3, 0.8, 321)
    stopped = pool.client().post("/v1/chat/completions", json={**body, "stop": ["END"]})
    if provider == "codex":  # no stop sequences there: refused, never dropped (XLAT-3)
        assert stopped.status_code == 400 and stopped.json()["error"]["code"] == "unsupported_for_provider"
    else:
        assert stopped.status_code == 200, stopped.text
        sent = _sent(pool, provider)
        stops = sent["stop_sequences"] if provider == "claude" else sent["generationConfig"]["stopSequences"]
        assert stops == ["END"]
