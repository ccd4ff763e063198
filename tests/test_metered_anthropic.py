"""Anthropic API keys as metered accounts (PAID-1, PAID-4) on a real gateway with the simulator's
Anthropic API (``/anthropic``): the import and its check, the official SDK, Claude Code and translated
clients served by the key, the key's rate-limit headers as quota, its 429 and its 401."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
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


# -- other client protocols through the hub (XLAT) ---------------------------------------------------

TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def test_paid_1_openai_sdk_responses_and_chat_are_served_by_an_anthropic_key(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    pool, key = _keyed_pool(make_pool, sim)
    account = pool.sim_accounts[0]
    sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=3))
    with openai.OpenAI(
        base_url=f"{pool.gateway.url}/v1", api_key=pool.key, max_retries=0, timeout=30
    ) as client:
        with client.responses.stream(model=MODEL, input="Say hi", store=False) as stream:
            streamed = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
            final = stream.get_final_response()
        answered = client.responses.create(model=MODEL, input="Say hi", store=False)
        chat = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        chunks = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        chat_streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        sim.script(account.id, Behaviour.ok(tool_call=True))
        called = client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "read a.txt"}],
            tools=TOOLS_CHAT,  # type: ignore[arg-type]
        )
    assert streamed == ANSWER and final.status == "completed" and final.usage is not None
    assert answered.output_text == ANSWER
    assert chat.choices[0].message.content == ANSWER and chat_streamed == ANSWER
    (tool_call,) = called.choices[0].message.tool_calls or []
    assert tool_call.type == "function" and tool_call.function.name == "read_file"
    assert "path" in json.loads(tool_call.function.arguments)
    upstream = sim.requests(endpoint="anthropic.messages")
    assert len(upstream) == 5
    for seen in upstream:
        assert seen.headers["x-api-key"] == key and "authorization" not in seen.headers
        assert "oauth-2025-04-20" not in seen.headers.get("anthropic-beta", "")
        system = json.dumps(seen.body.get("system", ""))
        assert "Claude Code" not in system  # no subscription identity on an API key
    assert {record.protocol for record in pool.finished} >= {"responses", "chat_completions"}


def test_paid_1_google_genai_and_a_messages_tool_call_are_served_by_an_anthropic_key(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    genai = pytest.importorskip("google.genai", reason="google-genai is installed with sublane-sim[test]")
    from google.genai import types

    pool, key = _keyed_pool(make_pool, sim)
    account = pool.sim_accounts[0]
    sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=3))
    client = genai.Client(api_key=pool.key, http_options=types.HttpOptions(base_url=pool.gateway.url))
    answer = client.models.generate_content(model=MODEL, contents="say hi")
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="say hi"))
    assert answer.text == ANSWER and "".join(chunk.text or "" for chunk in chunks) == ANSWER
    sim.script(account.id, Behaviour.ok(tool_call=True))
    tool = {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
    with _sdk(pool) as native:
        called = native.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": "read a.txt"}],
            tools=[tool],  # type: ignore[list-item]
        )
    assert called.stop_reason == "tool_use"
    (use,) = [block for block in called.content if block.type == "tool_use"]
    assert use.name == "read_file" and "path" in use.input
    upstream = sim.requests(endpoint="anthropic.messages")
    assert len(upstream) == 3 and all(seen.headers["x-api-key"] == key for seen in upstream)
    assert {record.protocol for record in pool.finished} == {"gemini", "messages"}


# -- PAID-4: the key's own limits ---------------------------------------------------------------------


def _runtime(pool: Pool) -> dict[int, dict[str, Any]]:
    answer = pool.admin.get("/api/accounts/runtime")
    assert answer.status_code == 200, answer.text
    return {account["id"]: account for account in answer.json()["accounts"]}


def _quota_rows(pool: Pool, account_id: int) -> dict[str, dict[str, Any]]:
    """The account's quota windows once an answer's headers have been observed (in the background)."""
    deadline = time.monotonic() + 10
    while True:
        rows = {row["window"]: row for row in _runtime(pool)[account_id]["quota"]}
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def _ask(pool: Pool) -> Any:
    with pool.client() as client:
        return client.post(
            "/v1/messages",
            json={"model": MODEL, "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}]},
            headers={"anthropic-version": "2023-06-01"},
        )


def test_paid_4_anthropic_rate_limit_headers_are_quota_and_a_spent_key_is_steered_around(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    # every answer spends the whole window: the answer that used its last request says remaining 0
    pool = make_pool(provider="anthropic", accounts=1, account_options={"quota_cost": 100.0})
    spent, spent_id = pool.sim_accounts[0], pool.account_ids[0]
    answer = _ask(pool)
    assert answer.status_code == 200
    assert not [name for name in answer.headers if name.startswith("anthropic-ratelimit")]  # the pool's
    rows = _quota_rows(pool, spent_id)
    assert set(rows) == {"requests", "tokens", "input_tokens", "output_tokens"}
    assert rows["requests"]["limit_reached"] is True and rows["requests"]["used_percent"] == 100.0
    assert rows["requests"]["resets_at"] > time.time() and rows["requests"]["main"] is True
    other_id = pool.add_account("anthropic", "anthropic-2")
    for _ in range(2):  # new conversations go to the key that has requests left
        assert _ask(pool).status_code == 200
    assert len(sim.requests(account_id=spent.id, endpoint="anthropic.messages")) == 1
    assert len(sim.requests(account_id=pool.sim_account_of(other_id).id, endpoint="anthropic.messages")) == 2


def test_paid_4_anthropic_429_cools_the_key_for_its_retry_after(
    make_pool: Callable[..., Pool], sim: Simulator
) -> None:
    pool = make_pool(provider="anthropic", accounts=1)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    sim.script(account.id, Behaviour.error(429, retry_after="40"))
    before = time.time()
    refused = _ask(pool)
    assert refused.status_code == 429 and refused.json()["type"] == "error"
    state = _runtime(pool)[account_id]
    assert state["state"] == "cooling"
    assert before + 35 <= state["cooldown_until"] <= time.time() + 41
    assert _ask(pool).status_code in (429, 503)  # still cooling: the key is not asked again
    assert len(sim.requests(account_id=account.id, endpoint="anthropic.messages")) == 1


def test_paid_4_anthropic_401_marks_the_key_unauthorized_without_a_refresh(
    make_pool: Callable[..., Pool], sim: Simulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pool = make_pool(provider="anthropic", accounts=1)
    account, account_id = pool.sim_accounts[0], pool.account_ids[0]
    new_key = sim.rotate_api_key(account.id)  # the imported key is revoked upstream
    refused = _ask(pool)
    assert refused.status_code == 503, refused.text
    assert new_key not in refused.text and account.api_key not in refused.text
    shown = pool.admin.get(f"/api/accounts/{account_id}").json()
    assert (shown["auth_state"], shown["auth_error"]) == ("reauth_required", "unauthorized")
    assert sim.counters(account.id).refreshes == 0
    # nothing but the key's model reads (its check, the catalogue) and the one refused call
    assert {record.endpoint for record in sim.requests()} == {"anthropic.models", "anthropic.messages"}
    assert _ask(pool).status_code == 503  # not asked again until an admin gives a new key
    assert [record.status for record in sim.requests(endpoint="anthropic.messages")] == [401]
    renewed = pool.admin.post(
        f"/api/accounts/{account_id}/credentials", json={"credentials": {"api_key": new_key}}
    )
    assert renewed.status_code == 200, renewed.text
    assert _ask(pool).status_code == 200
    assert pool.admin.get(f"/api/accounts/{account_id}").json()["auth_state"] == "ok"
    for text in (caplog.text, pool.admin.get("/api/requests").text, pool.admin.get("/api/audit").text):
        assert account.api_key not in text and new_key not in text


# -- the real client ----------------------------------------------------------------------------------

NODE_BIN = Path(__file__).resolve().parents[1] / ".cache" / "node-clients" / "node_modules" / ".bin"


@pytest.mark.e2e
def test_paid_1_claude_code_with_an_api_key_is_served_by_an_anthropic_key(
    make_pool: Callable[..., Pool], sim: Simulator, tmp_path: Path
) -> None:
    binary = NODE_BIN / "claude"
    if shutil.which("npm") is None or not binary.exists():
        pytest.skip(f"claude is not installed under {NODE_BIN} (make clients)")
    pool, key = _keyed_pool(make_pool, sim)
    sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(text=ANSWER, deltas=5))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "TERM": "dumb",
        "ANTHROPIC_BASE_URL": pool.gateway.url,
        "ANTHROPIC_API_KEY": pool.key,  # the member's SubLane key, as Claude Code's API key
    }
    run = subprocess.run(
        [str(binary), "-p", "--session-id", str(uuid.uuid4()), "say hi"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert ANSWER in run.stdout
    calls = sim.requests(endpoint="anthropic.messages")
    assert calls and all(call.headers["x-api-key"] == key for call in calls)
    for call in calls:  # Claude Code's own betas reach the API; the OAuth one never does
        betas = call.headers.get("anthropic-beta", "")
        assert "oauth-2025-04-20" not in betas and "authorization" not in call.headers
    assert any("claude-code-" in call.headers.get("anthropic-beta", "") for call in calls)
    served = [
        record for record in pool.finished if record.operation == "messages" and record.outcome == "success"
    ]
    assert served and {record.provider for record in served} == {"anthropic"}
