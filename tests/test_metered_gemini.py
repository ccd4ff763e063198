"""Metered Gemini API keys (provider ``gemini``) in the pool: PAID-1 and PAID-4 on a real gateway with
the simulator's Gemini API (``/gemini``), the google-genai SDK and the hub's other protocols."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool

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
