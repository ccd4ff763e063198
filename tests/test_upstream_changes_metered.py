"""Upstream changes watched (CLIENT-7) for the metered API-key providers (issue #48): the OpenAI
API, the Anthropic API and OpenAI-compatible servers, served by the simulator's ``/openai/v1``,
``/anthropic`` and ``/compat/v1``. What each upstream usually answers is no news; a new event, field
or error code is relayed as it came and listed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from gateway_pool import Pool

from sublane_sim import Behaviour

COMPAT = "openai-compatible"
COMPAT_MODEL = "qwen3-coder-30b"
MESSAGES_BODY = {
    "model": "claude-opus-4-8",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}
#: Each provider's own protocol: its path, and a body of it.
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("/v1/responses", {"model": "gpt-5", "input": "hi"}),
    "anthropic": ("/v1/messages", MESSAGES_BODY),
    COMPAT: (
        "/v1/chat/completions",
        {"model": COMPAT_MODEL, "messages": [{"role": "user", "content": "hi"}]},
    ),
}

ENDPOINTS = {"openai": "openai.responses", "anthropic": "anthropic.messages", COMPAT: "compat.chat"}


def _pool(make_pool: Callable[..., Pool], provider: str) -> Pool:
    """A gateway with one account of ``provider`` on the simulator's API-key upstream."""
    if provider != COMPAT:
        return make_pool(provider=provider, failover_attempts=0)
    pool = make_pool(accounts=0, failover_attempts=0)
    account = pool.sim.create_account("compat")
    credentials = {"api_key": account.api_key, "base_url": pool.sim.compat_base_url, "models": [COMPAT_MODEL]}
    body = {"provider": COMPAT, "name": "vllm", "credentials": credentials, "group_ids": [1]}
    imported = pool.admin.post("/api/accounts/import", json=body)
    assert imported.status_code == 201, imported.text
    pool.account_ids.append(imported.json()["id"])
    pool.sim_accounts.append(account)
    pool.settle()
    priced = pool.admin.put(f"/api/prices/{COMPAT_MODEL}", json={"input": 0.2, "output": 0.8})  # PAID-3
    assert priced.status_code == 200, priced.text
    return pool


def _call(client: httpx.Client, provider: str, *, stream: bool) -> httpx.Response:
    path, body = CALLS[provider]
    return client.post(path, json={**body, "stream": stream})


def _changes(admin: httpx.Client, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        items: list[dict[str, Any]] = admin.get("/api/upstream-changes").json()["items"]
        if len(items) >= count or time.monotonic() > deadline:
            return items
        time.sleep(0.05)


#: What each upstream answers when the key's credit or rate is used up, as the real API words it.
REFUSALS = {
    "openai": (Behaviour.error(429, error_code="insufficient_quota"), Behaviour.error(429)),
    "anthropic": (
        Behaviour.error(402, error_code="billing_error", error_message="Your credit balance is too low."),
        Behaviour.error(
            400, error_message="Your credit balance is too low to access the Anthropic API. Please go to "
            "Plans & Billing to upgrade or purchase credits."
        ),
        Behaviour.error(429),
        Behaviour.error(529),
    ),
    COMPAT: (
        Behaviour.error(429), Behaviour.error(503), Behaviour.error(400),
        Behaviour.error(402, error_code="unknown_error", error_message="Insufficient Balance"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("provider", ["openai", "anthropic", COMPAT])
def test_client_7_metered_upstreams_usual_answers_are_not_news(
    make_pool: Callable[..., Pool], provider: str
) -> None:
    """No false news: streamed and JSON answers, an in-stream failure and each upstream's usual
    refusals (out of credit, rate limited, overloaded) are all in the provider's vocabulary — while
    the provider is watched (a provider declaring nothing would list nothing either)."""
    pool = _pool(make_pool, provider)
    account = pool.sim_accounts[0]
    with pool.client() as client:
        for behaviour in (
            Behaviour.ok(),
            Behaviour.ok(),
            Behaviour.overload(after_deltas=1),
            *REFUSALS[provider],
        ):
            pool.sim.script(account.id, behaviour, behaviour)
            for stream in (True, False):
                answer = _call(client, provider, stream=stream)
                assert answer.status_code < 500 or behaviour.kind != "ok", answer.text
                pool.gateway.clock.advance(3600)  # past any cooldown: the next call reaches the upstream
            pool.settle()
    calls = pool.sim.requests(account_id=account.id, endpoint=ENDPOINTS[provider])
    assert len(calls) >= 2 * (3 + len(REFUSALS[provider]))  # each reached the upstream
    time.sleep(0.8)  # a flush
    assert pool.admin.get("/api/upstream-changes").json()["items"] == []
    # and the provider is watched: one new field is news at once (an empty list means something)
    pool.sim.script(account.id, Behaviour.ok(extra_field="newly_added"))
    assert _call(pool.client(), provider, stream=False).status_code == 200
    assert [(item["kind"], item["name"]) for item in _changes(pool.admin, 1)] == [
        ("answer_field", "newly_added")
    ]


def test_client_7_metered_openai_unknown_event_field_and_error_code_relayed_and_listed(
    make_pool: Callable[..., Pool],
) -> None:
    """The OpenAI API: a new event type and terminal-event field in a Responses stream, and an
    error code never seen, are relayed as they came (the call succeeds, the error keeps its status
    and message) and listed under ``openai``."""
    pool = _pool(make_pool, "openai")
    changed = Behaviour.ok(extra_event="response.safety_check.done", extra_field="safety_report")
    refused = Behaviour.error(400, error_code="prompt_policy_error", error_message="Not allowed.")
    pool.sim.script(pool.sim_accounts[0].id, changed, refused)
    with pool.client() as client:
        answer = _call(client, "openai", stream=True)
        error = _call(client, "openai", stream=True)
    assert answer.status_code == 200
    assert "event: response.safety_check.done\n" in answer.text  # relayed as it came
    assert '"safety_report":true' in answer.text.replace(" ", "")
    assert error.status_code == 400 and "Not allowed." in error.text
    items = _changes(pool.admin, 3)
    assert {(item["provider"], item["kind"], item["name"]) for item in items} == {
        ("openai", "event", "response.safety_check.done"),
        ("openai", "terminal_field", "safety_report"),
        ("openai", "error", "prompt_policy_error"),
    }
    assert {item["example_request_id"] for item in items if item["kind"] == "event"} == {
        answer.headers["x-request-id"]
    }


def test_client_7_metered_anthropic_unknown_event_field_and_error_type_relayed_and_listed(
    make_pool: Callable[..., Pool],
) -> None:
    """The Anthropic API: a new stream event type, a new field of a message and an error type never
    seen are relayed as they came and listed under ``anthropic``."""
    pool = _pool(make_pool, "anthropic")
    refused = Behaviour.error(400, error_code="prompt_policy_error", error_message="Not allowed.")
    pool.sim.script(
        pool.sim_accounts[0].id,
        Behaviour.ok(extra_event="thinking_budget_update"),
        Behaviour.ok(extra_field="thinking_audit"),
        refused,
    )
    with pool.client() as client:
        streamed = _call(client, "anthropic", stream=True)
        answer = _call(client, "anthropic", stream=False)
        error = _call(client, "anthropic", stream=False)
    assert streamed.status_code == 200 and "event: thinking_budget_update\n" in streamed.text
    assert answer.status_code == 200 and answer.json()["thinking_audit"] is True
    assert error.status_code == 400 and "Not allowed." in error.json()["error"]["message"]
    items = _changes(pool.admin, 3)
    assert {(item["provider"], item["kind"], item["name"]) for item in items} == {
        ("anthropic", "event", "thinking_budget_update"),
        ("anthropic", "answer_field", "thinking_audit"),
        ("anthropic", "error", "prompt_policy_error"),
    }


def test_client_7_metered_compat_unknown_field_and_error_code_relayed_and_listed(
    make_pool: Callable[..., Pool],
) -> None:
    """An OpenAI-compatible server: a new top-level field of a JSON answer and an error code never
    seen are relayed as they came and listed under ``openai-compatible``."""
    pool = _pool(make_pool, COMPAT)
    refused = Behaviour.error(400, error_code="guided_decoding_error", error_message="Not allowed.")
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(extra_field="kv_transfer_params"), refused)
    with pool.client() as client:
        answer = _call(client, COMPAT, stream=False)
        error = _call(client, COMPAT, stream=True)
    assert answer.status_code == 200 and answer.json()["kv_transfer_params"] is True
    assert error.status_code == 400 and "Not allowed." in error.text
    items = _changes(pool.admin, 2)
    assert {(item["provider"], item["kind"], item["name"]) for item in items} == {
        (COMPAT, "answer_field", "kv_transfer_params"),
        (COMPAT, "error", "guided_decoding_error"),
    }
