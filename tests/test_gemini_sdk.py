"""The ``google-genai`` SDK through SubLane to a pooled Antigravity account: stream, JSON, a function call."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour

genai = pytest.importorskip("google.genai", reason="google-genai is installed with sublane-sim[test]")
from google.genai import errors, types  # noqa: E402

MODEL = "gemini-3-flash"
ANSWER = "Hello from Antigravity"

pytestmark = pytest.mark.e2e


def sdk(pool: Pool, key: str | None = None) -> genai.Client:
    return genai.Client(api_key=key or pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))


def test_gem_2_google_genai_generate_content(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=4))
    client = sdk(pool)
    answer = client.models.generate_content(model=MODEL, contents="say hi")
    assert answer.text == ANSWER
    assert answer.usage_metadata is not None and answer.usage_metadata.prompt_token_count
    assert pool.finished[-1].provider == "antigravity" and pool.finished[-1].outcome == "success"


def test_gem_2_google_genai_stream(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=4))
    client = sdk(pool)
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="say hi"))
    assert len(chunks) > 1
    assert "".join(chunk.text or "" for chunk in chunks) == ANSWER
    assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def test_gem_2_google_genai_function_call(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(tool_call=True))
    weather = types.FunctionDeclaration(
        name="get_weather",
        description="The weather in a city.",
        parameters_json_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    client = sdk(pool)
    answer = client.models.generate_content(
        model=MODEL,
        contents="weather in Paris?",
        config=types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=[weather])],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        ),
    )
    calls = answer.function_calls
    assert calls and calls[0].name == "get_weather" and calls[0].id  # the call keeps its upstream id
    sent = pool.sim.requests(endpoint="antigravity.generateContent")[-1].body["request"]
    assert sent["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


def test_gem_2_google_genai_sees_sublane_errors_as_api_errors(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    stranger, client = sdk(pool, key="sl_not_a_key"), sdk(pool)
    with pytest.raises(errors.ClientError) as refused:
        stranger.models.generate_content(model=MODEL, contents="hi")
    assert refused.value.code == 401 and refused.value.status == "UNAUTHENTICATED"
    with pytest.raises(errors.ClientError) as missing:
        client.models.generate_content(model="gemini-0-nothing", contents="hi")
    assert missing.value.code == 404 and "model_not_found" in (missing.value.message or "")


def test_aff_6_google_genai_with_a_provider_prefix_and_errors_it_can_read(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="antigravity")
    pool.add_account("codex", "codex-1")
    client = sdk(pool)
    answer = client.models.generate_content(model="codex/gpt-5-codex", contents="say hi")
    assert answer.text and pool.finished[-1].provider == "codex"
    with pytest.raises(errors.ClientError) as unknown:  # the SDK reads Google's envelope
        client.models.generate_content(model="nobody/gpt-5-codex", contents="say hi")
    assert unknown.value.code == 404 and unknown.value.status == "NOT_FOUND"
    assert "model_not_found" in (unknown.value.message or "")
