"""Anthropic API keys as metered accounts (PAID-1, PAID-4) on a real gateway with the simulator's
Anthropic API (``/anthropic``): the import and its check, the official SDK, Claude Code and translated
clients served by the key, the key's rate-limit headers as quota, its 429 and its 401."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour, Simulator

MODEL = "claude-opus-4-8"
ANSWER = "Hello from a metered key"


def _import(pool: Pool, credentials: dict[str, Any], name: str = "anthropic-key") -> Any:
    return pool.admin.post(
        "/api/accounts/import",
        json={"provider": "anthropic", "name": name, "credentials": credentials, "group_ids": [1]},
    )


def _keyed_pool(make_pool: Callable[..., Pool], sim: Simulator, **settings: Any) -> tuple[Pool, str]:
    """A gateway with no account, then one anthropic key imported with the sim's base URL:
    ``(pool, the key)``."""
    pool = make_pool(accounts=0, provider="anthropic", **settings)
    account = sim.create_account("anthropic")
    response = _import(pool, {"api_key": account.api_key, "base_url": sim.anthropic_base_url})
    assert response.status_code == 201, response.text
    pool.sim_accounts.append(account)
    pool.account_ids.append(response.json()["id"])
    pool.settle()
    return pool, account.api_key


def _sdk(pool: Pool) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=pool.gateway.url, api_key=pool.key, max_retries=0, timeout=30)


def test_paid_1_anthropic_key_is_checked_stored_metered_and_never_shown(
    make_pool: Callable[..., Pool], sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool(accounts=0, provider="anthropic")
    refused = _import(pool, {"api_key": "sk-ant-api03-wrong-key-123", "base_url": sim.anthropic_base_url})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_credentials"
    assert "wrong-key-123" not in refused.text
    assert pool.admin.get("/api/accounts").json()["items"] == []
    account = sim.create_account("anthropic")
    imported = _import(pool, {"api_key": account.api_key, "base_url": sim.anthropic_base_url})
    assert imported.status_code == 201, imported.text
    shown = pool.admin.get(f"/api/accounts/{imported.json()['id']}")
    assert shown.json()["billing"] == "metered"
    seen = sim.requests(endpoint="anthropic.models")
    assert seen and seen[-1].headers["x-api-key"] == account.api_key  # the check listed models
    pool.settle()
    sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=3))
    with _sdk(pool) as client:
        message = client.messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "say hi"}]
        )
    assert message.content[0].type == "text" and message.content[0].text == ANSWER
    answers = [
        imported.text,
        shown.text,
        pool.admin.get("/api/accounts").text,
        pool.admin.get("/api/accounts/runtime").text,
        pool.admin.get("/api/requests").text,
        pool.admin.get("/api/audit").text,
        pool.gateway.client().get("/metrics").text,
    ]
    for text in [*answers, caplog.text]:
        assert account.api_key not in text


def test_paid_1_anthropic_sdk_streams_and_counts_through_a_metered_key(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    pool, key = _keyed_pool(make_pool, sim)
    account = pool.sim_accounts[0]
    sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=4))
    with _sdk(pool) as client:
        with client.messages.stream(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "say hi"}]
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        counted = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert text == ANSWER and final.usage.output_tokens > 0
    assert counted.input_tokens > 0
    upstream = sim.requests(endpoint="anthropic.messages")[-1]
    assert upstream.path == "/anthropic/v1/messages"
    assert upstream.headers["x-api-key"] == key and "authorization" not in upstream.headers
    assert "oauth-2025-04-20" not in upstream.headers.get("anthropic-beta", "")
    assert upstream.headers["anthropic-version"]  # the SDK's own, relayed
    assert sim.requests(endpoint="anthropic.count_tokens")
    record = next(r for r in pool.finished if r.operation == "messages")
    assert record.provider == "anthropic" and record.input_tokens and record.output_tokens
    assert record.cache_write_tokens is not None  # the Messages usage's cache writes
