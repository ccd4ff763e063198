"""PAID-1 and PAID-4 for the ``openai`` provider: OpenAI API keys as metered pool members, served by
the upstream simulator's OpenAI API (``/openai/v1``) through a real gateway."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from gateway_pool import Pool

from sublane_sim import Simulator

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
