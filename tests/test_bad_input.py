"""Bad input on the model routes (OPS-1, API §14): a clear 4xx in the client protocol's own shape,
nothing sent upstream, never a 500, never a failure of an account or a model."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GEMINI_MODEL = "gemini-3-flash"
GEMINI_BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def code_assist_body(model: str) -> dict[str, Any]:
    """A Code Assist generate body (CLIENT-6): the Gemini request inside Code Assist's wrapper."""
    return {"model": model, "project": "p", "user_prompt_id": "u", "request": dict(GEMINI_BODY)}


def code_assist_count(model: str) -> dict[str, Any]:
    return {"request": {"model": f"models/{model}", **GEMINI_BODY}}


#: (method, path, body, shape) of every model route a key opens; shape: "openai", "anthropic", "google"
MODEL_ROUTES: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("POST", "/v1/responses", {"model": "gpt-5-codex", "input": "hi"}, "openai"),
    (
        "POST",
        "/v1/responses/compact",
        {
            "model": "gpt-5-codex",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        },
        "openai",
    ),
    (
        "POST",
        "/v1/chat/completions",
        {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}]},
        "openai",
    ),
    (
        "POST",
        "/v1/messages",
        {"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
        "anthropic",
    ),
    (
        "POST",
        "/v1/messages/count_tokens",
        {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": "hi"}]},
        "anthropic",
    ),
    ("POST", f"/v1beta/models/{GEMINI_MODEL}:generateContent", GEMINI_BODY, "google"),
    ("POST", f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent", GEMINI_BODY, "google"),
    ("POST", f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse", GEMINI_BODY, "google"),
    ("POST", f"/v1beta/models/{GEMINI_MODEL}:countTokens", GEMINI_BODY, "google"),
    ("POST", "/v1internal:generateContent", code_assist_body(GEMINI_MODEL), "google"),
    ("POST", "/v1internal:streamGenerateContent?alt=sse", code_assist_body(GEMINI_MODEL), "google"),
    ("POST", "/v1internal:countTokens", code_assist_count(GEMINI_MODEL), "google"),
    ("POST", "/v1internal:loadCodeAssist", {"metadata": {"pluginType": "GEMINI"}}, "google"),
    ("GET", "/v1/models", None, "openai"),
    ("GET", "/v1beta/models", None, "google"),
]


def code_of(response: httpx.Response, shape: str) -> str:
    """The SubLane code of an error answer, checking that it is in ``shape`` (the client's own)."""
    body = response.json()
    if shape == "anthropic":
        assert body["type"] == "error" and isinstance(body["error"]["type"], str), body
        code: str = body["error"]["code"]
        return code
    if shape == "google":
        error = body["error"]
        assert error["code"] == response.status_code and isinstance(error["status"], str), body
        reason: str = error["details"][0]["reason"]
        return reason
    code = body["error"]["code"]
    return code


@pytest.fixture
def three_providers(make_pool: Callable[..., Pool]) -> Pool:
    """A pool with one account of each provider, so every route can be served."""
    pool = make_pool(provider="codex")
    pool.add_account("claude", "claude-1")
    pool.add_account("antigravity", "antigravity-1")
    return pool


def _send(
    pool: Pool, method: str, path: str, body: dict[str, Any] | None, headers: list[tuple[str, str]]
) -> httpx.Response:
    client = pool.gateway.client()
    return client.request(method, path, json=body, headers=headers)


def test_ops_1_keys_that_disagree_are_refused_on_every_model_route(three_providers: Pool) -> None:
    pool = three_providers
    good, bad = pool.key, "sl_" + "A" * 43
    disagreeing = {
        "valid then bad Authorization": [
            ("authorization", f"Bearer {good}"),
            ("authorization", f"Bearer {bad}"),
        ],
        "bad then valid Authorization": [
            ("authorization", f"Bearer {bad}"),
            ("authorization", f"Bearer {good}"),
        ],
        "Authorization and x-api-key": [("authorization", f"Bearer {good}"), ("x-api-key", bad)],
        "x-api-key and x-goog-api-key": [("x-api-key", good), ("x-goog-api-key", bad)],
    }
    for method, path, body, shape in MODEL_ROUTES:
        for case, headers in disagreeing.items():
            refused = _send(pool, method, path, body, headers)
            assert refused.status_code == 401, (path, case, refused.status_code, refused.text)
            # a Gemini caller of GET /v1/models (x-goog-api-key) gets Google's shape there
            gemini_caller = path == "/v1/models" and any(name == "x-goog-api-key" for name, _ in headers)
            assert code_of(refused, "google" if gemini_caller else shape) == "invalid_api_key", (path, case)
        same_twice = [("authorization", f"Bearer {good}"), ("x-api-key", good)]
        assert _send(pool, method, path, body, same_twice).status_code == 200, path
    for method, path, body, _shape in MODEL_ROUTES:
        if not path.startswith("/v1beta"):
            continue
        joiner = "&" if "?" in path else "?"
        header_and_bad_query = _send(
            pool, method, f"{path}{joiner}key={bad}", body, [("x-goog-api-key", good)]
        )
        assert header_and_bad_query.status_code == 401, (path, header_and_bad_query.text)
        assert code_of(header_and_bad_query, "google") == "invalid_api_key"
        two_queries = _send(pool, method, f"{path}{joiner}key={good}&key={bad}", body, [])
        assert two_queries.status_code == 401, path
        agreeing = _send(pool, method, f"{path}{joiner}key={good}", body, [("x-goog-api-key", good)])
        assert agreeing.status_code == 200, (path, agreeing.text)


#: One model of each provider (Codex, Claude, Antigravity): every route is tried with each.
MODELS = ("gpt-5-codex", "claude-sonnet-5-5", "gemini-3-flash")


def _post_routes(model: str) -> list[tuple[str, dict[str, Any], str]]:
    """(path, body, shape) of every POST model route, for ``model``."""
    chat = [{"role": "user", "content": "hi"}]
    return [
        ("/v1/responses", {"model": model, "input": "hi"}, "openai"),
        ("/v1/responses?stream=true", {"model": model, "input": "hi", "stream": True}, "openai"),
        ("/v1/chat/completions", {"model": model, "messages": chat}, "openai"),
        ("/v1/messages", {"model": model, "max_tokens": 16, "messages": chat}, "anthropic"),
        ("/v1/messages/count_tokens", {"model": model, "messages": chat}, "anthropic"),
        (f"/v1beta/models/{model}:generateContent", GEMINI_BODY, "google"),
        (f"/v1beta/models/{model}:streamGenerateContent?alt=sse", GEMINI_BODY, "google"),
        (f"/v1beta/models/{model}:countTokens", GEMINI_BODY, "google"),
        ("/v1internal:generateContent", code_assist_body(model), "google"),
        ("/v1internal:streamGenerateContent?alt=sse", code_assist_body(model), "google"),
        ("/v1internal:countTokens", code_assist_count(model), "google"),
    ]


def model_calls(pool: Pool) -> int:
    return sum(pool.sim.counters(account.id).model_requests for account in pool.sim_accounts)


def _assert_refused_at_the_door(
    pool: Pool, raw: Callable[[dict[str, Any]], bytes], status: int, code: str, **headers: str
) -> None:
    client = pool.client()
    before = model_calls(pool)
    for model in MODELS:
        for path, body, shape in _post_routes(model):
            sent = {"content-type": "application/json", "x-api-key": pool.key, **headers}
            answer = client.post(path, content=raw(body), headers=sent)
            assert answer.status_code == status, (model, path, answer.status_code, answer.text)
            assert code_of(answer, shape) == code, (model, path, answer.text)
    assert model_calls(pool) == before  # nothing went upstream
    states = {account["state"] for account in pool.admin.get("/api/accounts/runtime").json()["accounts"]}
    assert states == {"ready"}  # no account and no model counted a failure
    for model in MODELS:  # and every model still serves
        path, body, _shape = _post_routes(model)[0]
        assert client.post(path, json=body).status_code == 200, model


def test_ops_1_encoded_surrogate_bytes_are_refused_on_every_route_and_provider(three_providers: Pool) -> None:
    # Found by probing: the UTF-8 bytes of a surrogate (ED A0 80) in a JSON string gave a 500 on
    # every call to a Claude account, in the wrong shape, and its record was lost.
    def raw(body: dict[str, Any]) -> bytes:
        text = json.dumps(body).replace('"hi"', '"h\\u0000i"').encode()
        return text.replace(b"\\u0000", b"\xed\xa0\x80")

    _assert_refused_at_the_door(three_providers, raw, 400, "invalid_json")
    assert not [record for record in three_providers.finished if record.outcome != "success"]


@pytest.mark.parametrize(
    "number", ["NaN", "Infinity", "-Infinity", "1e400"], ids=["nan", "infinity", "minus-infinity", "1e400"]
)
def test_ops_1_numbers_rfc_8259_does_not_allow_are_refused(three_providers: Pool, number: str) -> None:
    def raw(body: dict[str, Any]) -> bytes:
        return json.dumps({**body, "temperature": 0.5}).replace("0.5", number).encode()

    _assert_refused_at_the_door(three_providers, raw, 400, "invalid_json")


def test_ops_1_a_body_that_is_not_utf_8_is_refused(three_providers: Pool) -> None:
    _assert_refused_at_the_door(
        three_providers, lambda body: json.dumps(body).encode("utf-16"), 400, "invalid_json"
    )


def test_ops_1_a_content_encoding_the_gateway_does_not_decode_is_415(three_providers: Pool) -> None:
    def raw(body: dict[str, Any]) -> bytes:
        return gzip.compress(json.dumps(body).encode())

    _assert_refused_at_the_door(
        three_providers, raw, 415, "unsupported_media_type", **{"content-encoding": "gzip"}
    )


def _google_error(answer: httpx.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["code"] == status and isinstance(error["status"], str) and error["details"], error
    return error


def test_ops_1_every_answer_under_v1beta_is_google_shaped(three_providers: Pool) -> None:
    # Found by probing: a model with "/" answered 404 and an unknown method 405, both in the
    # management shape ({"error": {"code": "not_found"}}), which Google's SDKs cannot read.
    api = three_providers.gateway.client(headers={"x-goog-api-key": three_providers.key})
    for path in (
        "/v1beta/models/nobody/gpt-5-codex:generateContent",
        "/v1beta/models/..%2F..%2Fapi%2Fusers:generateContent",
        "/v1beta/models/a/b/c:streamGenerateContent",
    ):
        error = _google_error(api.post(path, json=GEMINI_BODY), 404)
        assert error["details"][0]["reason"] == "model_not_found", (path, error)
    unknown_method = _google_error(api.post(f"/v1beta/models/{GEMINI_MODEL}:nope", json=GEMINI_BODY), 404)
    assert unknown_method["status"] == "NOT_FOUND"
    assert _google_error(api.get("/v1beta/nothing/here"), 404)["status"] == "NOT_FOUND"
    assert _google_error(api.get("/v1beta"), 404)["status"] == "NOT_FOUND"  # the bare base URL too
    bare_openai = api.get("/v1")
    assert bare_openai.status_code == 404 and code_of(bare_openai, "openai") == "not_found", bare_openai.text
    assert _google_error(api.delete("/v1beta/models"), 404)["status"] == "NOT_FOUND"
    bad_key = three_providers.gateway.client(headers={"x-goog-api-key": "sl_nope"})
    assert _google_error(bad_key.post("/v1beta/models/x/y:countTokens", json=GEMINI_BODY), 401)


@pytest.mark.parametrize("written", ["codex/gpt-5-codex", "codex%2Fgpt-5-codex"], ids=["slash", "escaped"])
def test_aff_6_a_provider_prefix_on_a_gemini_path(three_providers: Pool, written: str) -> None:
    """``models/codex/gpt-5-codex`` is how the google-genai SDK writes a model named
    ``codex/gpt-5-codex``: the prefix limits the provider (AFF-6), escaped or not."""
    api = three_providers.gateway.client(headers={"x-goog-api-key": three_providers.key})
    answer = api.post(f"/v1beta/models/{written}:generateContent", json=GEMINI_BODY)
    assert answer.status_code == 200, answer.text
    assert three_providers.finished[-1].provider == "codex"
    assert answer.json()["candidates"][0]["content"]["parts"]


#: Known fields with a value of a type their protocol's published schema does not allow.
MALFORMED: dict[str, list[tuple[str, Any]]] = {
    "responses": [
        ("reasoning", 5),
        ("reasoning", "high"),
        ("reasoning", []),
        ("reasoning", True),
        ("reasoning", {"effort": 3}),
        ("text", "json"),
        ("temperature", "hot"),
        ("max_output_tokens", 1.5),
        ("tools", {}),
        ("tool_choice", 7),
        ("instructions", ["be brief"]),
        ("parallel_tool_calls", "yes"),
        ("input", 5),
    ],
    "chat": [
        ("temperature", "hot"),
        ("max_tokens", "10"),
        ("messages", "hi"),
        ("messages", [{"role": 5, "content": "hi"}]),
        ("stop", 5),
        ("tools", [{"type": "function", "function": "f"}]),
        ("stream", "yes"),
        ("response_format", "json"),
    ],
    "messages": [
        ("max_tokens", "16"),
        ("temperature", [0.5]),
        ("system", 5),
        ("thinking", 5),
        ("tools", {}),
        ("stop_sequences", "END"),
        ("messages", ["hi"]),
    ],
    "gemini": [
        ("generationConfig", []),
        ("generationConfig", {"temperature": "hot"}),
        ("generationConfig", {"maxOutputTokens": 1.5}),
        ("generationConfig", {"thinkingConfig": {"includeThoughts": "yes"}}),
        ("contents", "hi"),
        ("tools", {}),
        ("systemInstruction", 7),
    ],
}


def _client_request(client: str, model: str) -> tuple[str, dict[str, Any], str]:
    chat = [{"role": "user", "content": "hi"}]
    if client == "responses":
        return "/v1/responses", {"model": model, "input": "hi"}, "openai"
    if client == "chat":
        return "/v1/chat/completions", {"model": model, "messages": chat}, "openai"
    if client == "messages":
        return "/v1/messages", {"model": model, "max_tokens": 16, "messages": chat}, "anthropic"
    return f"/v1beta/models/{model}:generateContent", dict(GEMINI_BODY), "google"


def _cooling(pool: Pool) -> list[dict[str, Any]]:
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    return [account for account in accounts if account["state"] != "ready" or account["limited_models"]]


@pytest.mark.parametrize("client", list(MALFORMED))
def test_ops_1_a_malformed_known_field_is_refused_before_any_upstream_call(
    three_providers: Pool, client: str
) -> None:
    pool = three_providers
    api = pool.client()
    for provider, model in zip(("codex", "claude", "antigravity"), MODELS, strict=True):
        path, body, shape = _client_request(client, f"{provider}/{model}")
        for field, bad in MALFORMED[client]:
            before = model_calls(pool)
            for _ in range(4):  # more than the model failure threshold (3)
                answer = api.post(path, json={**body, field: bad})
                assert answer.status_code == 400, (provider, field, bad, answer.status_code, answer.text)
                assert code_of(answer, shape) == "invalid_request", (provider, field, answer.text)
                assert field.split(".")[0] in answer.text
            assert model_calls(pool) == before, (provider, field)  # nothing went upstream
        assert api.post(path, json=body).status_code == 200, (client, provider)
    assert _cooling(pool) == []  # no account and no model counted a failure


@pytest.mark.parametrize("provider", ["claude", "antigravity"])
def test_ops_1_an_input_type_that_is_not_a_string_is_refused_on_a_translated_call(
    three_providers: Pool, provider: str
) -> None:
    """An item's or a content part's ``type`` given as a list or an object, on a call translated for
    another provider: 400 ``invalid_request`` naming the item, nothing upstream, nothing cooled (a
    set lookup of the list was a 500)."""
    pool = three_providers
    api = pool.client()
    model = f"{provider}/{MODELS[('codex', 'claude', 'antigravity').index(provider)]}"
    inputs = [
        [{"type": [], "role": "user", "content": "hi"}],
        [{"type": {}, "role": "user", "content": "hi"}],
        [{"type": "message", "role": "user", "content": [{"type": [], "text": "hi"}]}],
        [{"type": "message", "role": "user", "content": [{"type": {"a": 1}, "text": "hi"}]}],
    ]
    before = model_calls(pool)
    for stream in (False, True):
        for value in inputs:
            answer = api.post("/v1/responses", json={"model": model, "input": value, "stream": stream})
            assert answer.status_code == 400, (value, answer.status_code, answer.text)
            assert code_of(answer, "openai") == "invalid_request", answer.text
            assert "input[0]" in answer.text
    assert model_calls(pool) == before
    assert _cooling(pool) == []


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
KNOWN_FIELDS = sorted({(client, field) for client, pairs in MALFORMED.items() for field, _ in pairs})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    case=st.sampled_from(KNOWN_FIELDS),
    value=JSON_VALUES,
    provider=st.sampled_from(["codex", "claude", "antigravity"]),
)
def test_ops_1_no_malformed_request_ever_counts_as_an_upstream_failure(
    three_providers: Pool, case: tuple[str, str], value: Any, provider: str
) -> None:
    """Any value in any known field, on any provider: a 4xx (refused here or by the upstream, as
    the real upstreams refuse malformed requests) or an answer — never a 5xx, never a cooldown."""
    client, field = case
    pool = three_providers
    path, body, _shape = _client_request(
        client, f"{provider}/{MODELS[('codex', 'claude', 'antigravity').index(provider)]}"
    )
    answer = pool.client().post(path, json={**body, field: value})
    assert answer.status_code < 500, (client, field, value, answer.text)
    assert _cooling(pool) == []


def test_ops_1_the_official_sdks_read_the_refusals(three_providers: Pool) -> None:
    """The changed answers as each protocol's own SDK sees them: a typed error with our code."""
    import anthropic
    import openai

    pool = three_providers
    oai = openai.OpenAI(
        base_url=f"{pool.gateway.url}/v1", api_key=pool.key, max_retries=0, http_client=pool.gateway.client()
    )
    with pytest.raises(openai.BadRequestError) as malformed:
        oai.responses.create(model="gpt-5-codex", input="hi", extra_body={"reasoning": 5})
    assert malformed.value.code == "invalid_request" and "reasoning" in str(malformed.value)
    with pytest.raises(openai.BadRequestError) as structured:
        oai.chat.completions.create(
            model="claude/claude-sonnet-5-5",
            messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_object"},
        )
    assert structured.value.code == "unsupported_for_provider"
    with anthropic.Anthropic(base_url=pool.gateway.url, api_key=pool.key, max_retries=0) as claude:
        with pytest.raises(anthropic.BadRequestError) as bad_type:
            claude.messages.create(
                model="claude-opus-4-6",
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
                extra_body={"temperature": "hot"},
            )
        assert bad_type.value.status_code == 400 and "temperature" in str(bad_type.value)
        with pytest.raises(anthropic.AuthenticationError):
            claude.messages.create(
                model="claude-opus-4-6",
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"authorization": "Bearer sl_" + "B" * 43},  # disagrees with x-api-key
            )
