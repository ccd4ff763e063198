"""The simulator's OpenAI API with API keys (``/openai/v1``, PAID-1): what the official SDK sees,
the ``x-ratelimit-*`` headers, the API's error bodies, scripting, and prompt-cache usage."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from sublane_sim import Behaviour, Simulator


@pytest.fixture
def api(sim: Simulator) -> Iterator[tuple[Simulator, openai.OpenAI, str]]:
    account = sim.create_account("openai")
    with openai.OpenAI(api_key=account.api_key, base_url=sim.openai_base_url, max_retries=0) as client:
        yield sim, client, account.id


def test_paid_1_sim_openai_lists_models_and_answers_stream_and_json(
    api: tuple[Simulator, openai.OpenAI, str],
) -> None:
    sim, client, account_id = api
    assert "gpt-5" in {model.id for model in client.models.list()}
    sim.set_default(account_id, Behaviour.ok(text="Hello there", deltas=3))
    answer = client.responses.create(model="gpt-5", input="hi")
    assert answer.output_text == "Hello there" and answer.usage is not None
    with client.responses.stream(model="gpt-5", input="hi") as stream:
        text = "".join(event.delta for event in stream if event.type == "response.output_text.delta")
    assert text == "Hello there"
    sent = sim.requests(endpoint="openai.responses")
    assert [record.account_id for record in sent] == [account_id, account_id]
    assert sim.account(account_id).credentials == {"api_key": sim.account(account_id).api_key}


def test_paid_1_sim_openai_reports_cached_tokens_for_a_repeated_prefix(
    api: tuple[Simulator, openai.OpenAI, str],
) -> None:
    _sim, client, _ = api
    instructions = "You are a careful assistant. " * 200
    first = client.responses.create(model="gpt-5", instructions=instructions, input="one")
    again = client.responses.create(model="gpt-5", instructions=instructions, input="one")
    assert first.usage is not None and again.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert again.usage.input_tokens_details.cached_tokens > 0


def test_paid_4_sim_openai_rate_limit_headers_and_an_exhausted_window(
    api: tuple[Simulator, openai.OpenAI, str],
) -> None:
    sim, client, account_id = api
    answered = client.responses.with_raw_response.create(model="gpt-5", input="hi")
    assert answered.headers["x-ratelimit-limit-requests"] == "5000"
    assert answered.headers["x-ratelimit-remaining-requests"] == "4999"  # this request counted
    assert 1_999_900 < int(answered.headers["x-ratelimit-remaining-tokens"]) < 2_000_000
    assert answered.headers["x-ratelimit-reset-requests"].endswith("s")
    sim.set_quota(account_id, "tokens", used_percent=100, reset_in_s=90)
    with pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(model="gpt-5", input="hi")
    assert limited.value.code == "rate_limit_exceeded" and "tokens per min" in limited.value.message
    assert limited.value.response.headers["x-ratelimit-remaining-tokens"] == "0"
    assert limited.value.response.headers["x-ratelimit-reset-tokens"] in ("1m30s", "1m29s")


def test_paid_4_sim_openai_scripted_errors_and_revoked_keys(
    api: tuple[Simulator, openai.OpenAI, str],
) -> None:
    sim, client, account_id = api
    sim.script(
        account_id,
        Behaviour.error(429, retry_after="7"),
        Behaviour.error(429, error_code="insufficient_quota"),
        Behaviour.error(503),
    )
    with pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(model="gpt-5", input="hi")
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.RateLimitError) as spent:
        client.responses.create(model="gpt-5", input="hi")
    assert spent.value.code == "insufficient_quota"
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-5", input="hi")
    with pytest.raises(openai.BadRequestError) as unknown:
        client.responses.create(model="gpt-5", input="hi", extra_body={"stop": ["x"]})
    assert unknown.value.code == "unknown_parameter"
    sim.update_account(account_id, api_key_revoked=True)
    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert refused.value.code == "invalid_api_key"
    codex = sim.create_account("codex")  # a ChatGPT token is no API key
    answer = httpx.get(
        f"{sim.openai_base_url}/models", headers={"authorization": f"Bearer {codex.access_token}"}
    )
    assert answer.status_code == 401


def test_paid_1_sim_openai_compacts(api: tuple[Simulator, openai.OpenAI, str]) -> None:
    _sim, client, _ = api
    answer = client.post(
        "/responses/compact",
        body={"model": "gpt-5", "input": [{"type": "message", "role": "user", "content": "keep me"}]},
        cast_to=httpx.Response,
    )
    body = answer.json()
    assert body["object"] == "response.compaction" and body["output"][-1]["type"] == "compaction"
    assert body["output"][0]["content"] == "keep me" and body["usage"]["output_tokens"] == 32


def test_paid_1_sim_openai_refuses_like_the_api_a_small_output_cap_and_an_unknown_model(
    api: tuple[Simulator, openai.OpenAI, str],
) -> None:
    """As the real Responses API: ``max_output_tokens`` under 16 is a 400
    ``integer_below_min_value``; a model the key cannot use is a 404 ``model_not_found``."""
    _sim, client, _account_id = api
    with pytest.raises(openai.BadRequestError) as small:
        client.responses.create(model="gpt-5", input="hi", max_output_tokens=1)
    assert small.value.code == "integer_below_min_value" and small.value.param == "max_output_tokens"
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="gpt-no-such-model", input="hi")
    assert unknown.value.code == "model_not_found"
    assert client.responses.create(model="gpt-5", input="hi", max_output_tokens=16).output_text


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/responses", "client_metadata"),  # the Codex CLI's, which the public API does not take
        ("/responses", "generate"),  # a Codex WebSocket prewarm's
        ("/responses", "stop"),
        ("/responses/compact", "stream"),
        ("/responses/compact", "tools"),
    ],
)
def test_paid_1_sim_openai_refuses_an_unknown_top_level_field_like_the_api(
    api: tuple[Simulator, openai.OpenAI, str], path: str, field: str
) -> None:
    """As the real API: any top-level field it does not document is a 400 ``unknown_parameter``
    naming it in ``param``; the documented ones (what the SDK sends) pass."""
    _sim, client, _account_id = api
    with pytest.raises(openai.BadRequestError) as refused:
        client.post(path, body={"model": "gpt-5", "input": "hi", field: {}}, cast_to=httpx.Response)
    assert refused.value.code == "unknown_parameter" and refused.value.param == field
    assert refused.value.body == {
        "message": f"Unknown parameter: '{field}'.",
        "type": "invalid_request_error",
        "param": field,
        "code": "unknown_parameter",
    }
    documented = client.responses.create(
        model="gpt-5",
        input="hi",
        store=False,
        include=["reasoning.encrypted_content"],
        prompt_cache_key="thread-1",
        prompt_cache_retention="24h",
        safety_identifier="user-1",
        metadata={"a": "b"},
        parallel_tool_calls=True,
        reasoning={"summary": "auto"},
        text={"verbosity": "low"},
        service_tier="auto",
    )
    assert documented.output_text
