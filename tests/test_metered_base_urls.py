"""PAID-1: the base URL an admin pastes for an API key is taken the way people paste it — with or
without the API's version path, with or without a trailing slash — for the anthropic (no ``/v1``:
the calls add it), openai (``/v1`` included, once) and gemini (no ``/v1beta``) providers: the key's
check and its calls reach the simulator's real paths."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from gateway_pool import Pool

from sublane_sim import Simulator


def _import(pool: Pool, provider: str, api_key: str, base_url: str) -> int:
    credentials = {"api_key": api_key, "base_url": base_url}
    body = {"provider": provider, "name": f"{provider}-key", "credentials": credentials, "group_ids": [1]}
    response = pool.admin.post("/api/accounts/import", json=body)
    assert response.status_code == 201, response.text  # the key's check reached the model list
    pool.settle()
    account_id: int = response.json()["id"]
    return account_id


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/", ""])
def test_paid_1_anthropic_base_url_is_taken_with_or_without_v1(
    make_pool: Callable[..., Pool], sim: Simulator, suffix: str
) -> None:
    pool = make_pool(accounts=0, provider="anthropic")
    account = sim.create_account("anthropic")
    _import(pool, "anthropic", account.api_key, sim.anthropic_base_url + suffix)
    body: dict[str, Any] = {
        "model": "claude-opus-4-8",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    answer = pool.client().post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
    assert answer.status_code == 200, answer.text
    assert {record.path for record in sim.requests(account_id=account.id)} == {
        "/anthropic/v1/models",  # the key's check and the catalogue
        "/anthropic/v1/messages",
    }


def test_paid_1_anthropic_setting_with_v1_is_taken_too(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    """``SUBLANE_ANTHROPIC_BASE_URL`` pasted with ``/v1``: keys imported without a base URL of
    their own are served at the host all the same."""
    pool = make_pool(accounts=0, provider="anthropic", anthropic_base_url=sim.anthropic_base_url + "/v1/")
    account = sim.create_account("anthropic")
    response = pool.admin.post(
        "/api/accounts/import",
        json={
            "provider": "anthropic",
            "name": "k",
            "credentials": {"api_key": account.api_key},
            "group_ids": [1],
        },
    )
    assert response.status_code == 201, response.text
    assert {record.path for record in sim.requests(account_id=account.id)} == {"/anthropic/v1/models"}


@pytest.mark.parametrize("suffix", ["/", "/v1", "/v1/"])
def test_paid_1_openai_base_url_keeps_one_v1(
    make_pool: Callable[..., Pool], sim: Simulator, suffix: str
) -> None:
    """The simulator's OpenAI API is ``…/openai/v1``: pasted with a trailing slash or a doubled
    ``/v1``, the calls still go to ``…/openai/v1/responses`` (a bare host gets ``/v1``: see the
    provider's tests)."""
    pool = make_pool(accounts=0, provider="openai")
    account = sim.create_account("openai")
    _import(pool, "openai", account.api_key, sim.openai_base_url + suffix)
    answer = pool.client().post("/v1/responses", json={"model": "gpt-5", "input": "hi"})
    assert answer.status_code == 200, answer.text
    assert {record.path for record in sim.requests(account_id=account.id)} == {
        "/openai/v1/models",
        "/openai/v1/responses",
    }


@pytest.mark.parametrize("suffix", ["/v1beta", "/v1beta/", "/v1", "/"])
def test_paid_1_gemini_base_url_is_taken_with_or_without_its_version(
    make_pool: Callable[..., Pool], sim: Simulator, suffix: str
) -> None:
    pool = make_pool(accounts=0, provider="gemini")
    account = sim.create_account("gemini")
    _import(pool, "gemini", account.api_key, sim.gemini_base_url + suffix)
    body = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}
    client = pool.gateway.client(headers={"x-goog-api-key": pool.key})
    with client:
        answer = client.post("/v1beta/models/gemini-2.5-flash:generateContent", json=body)
    assert answer.status_code == 200, answer.text
    paths = [record.path for record in sim.requests(account_id=account.id)]
    assert (
        paths[0] == "/gemini/v1beta/models"
        and paths[-1] == "/gemini/v1beta/models/gemini-2.5-flash:generateContent"
    )
