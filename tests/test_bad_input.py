"""Bad input on the model routes (OPS-1, API §14): a clear 4xx in the client protocol's own shape,
nothing sent upstream, never a 500, never a failure of an account or a model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool

GEMINI_MODEL = "gemini-3-flash"
GEMINI_BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

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
