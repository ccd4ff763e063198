"""PAID-1 for the ``openai`` provider with the real clients: the Codex CLI (a custom model provider
pointing at SubLane, over HTTP and WebSocket) served natively by a metered OpenAI API key, and Claude
Code and the Gemini CLI served by it through the hub — each with a tool round trip. Skipped only
when a client is not installed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from gateway_pool import Pool
from test_real_clients import ANSWER, _claude, _client, _codex, _gemini

from sublane_sim import Behaviour

pytestmark = pytest.mark.e2e


def _metered_pool(make_pool: Callable[..., Pool]) -> Pool:
    pool = make_pool(provider="openai")
    account = pool.sim_accounts[0]
    pool.sim.script(account.id, Behaviour.ok(tool_call=True, text="Looking.", deltas=2))
    pool.sim.set_default(account.id, Behaviour.ok(text=ANSWER, deltas=5))
    return pool


def _served_by_the_key(pool: Pool, protocol: str, result_marker: str) -> None:
    served = [record for record in pool.finished if record.outcome == "success"]
    assert len(served) >= 2, [(r.protocol, r.outcome, r.error_code) for r in pool.finished]
    assert {(record.provider, record.protocol) for record in served} == {("openai", protocol)}
    sent = pool.sim.requests(endpoint="openai.responses")
    key = pool.sim_accounts[0].api_key
    assert sent and all(record.headers["authorization"] == f"Bearer {key}" for record in sent)
    assert any(result_marker in str(record.body) for record in sent)  # the tool's result went back
    assert pool.runtime.leases.total_in_flight() == 0


@pytest.mark.parametrize("websocket", [False, True], ids=["http", "websocket"])
def test_paid_1_codex_cli_served_by_a_metered_openai_key(
    make_pool: Callable[..., Pool], tmp_path: Path, websocket: bool
) -> None:
    """Over a WebSocket too: the gateway serves the socket's turns with HTTP calls to the API."""
    _client("codex")
    pool = _metered_pool(make_pool)
    result = _codex(pool, tmp_path, websocket=websocket, model="gpt-5-codex")
    assert result.returncode == 0, result.stderr[-3000:]
    assert ANSWER in result.stdout
    _served_by_the_key(pool, "responses_ws" if websocket else "responses", "function_call_output")
    sent = pool.sim.requests(endpoint="openai.responses")
    assert all(record.path == "/openai/v1/responses" for record in sent)
    # the simulator answers 400 unknown_parameter to what the public API does not take, as the API:
    # the CLI's client_metadata (its installation and thread ids) and its headers stay at the gateway
    assert all(record.status == 200 and "client_metadata" not in record.body for record in sent)
    assert not any(
        name.lower().startswith("x-codex") or name.lower() in ("originator", "session_id", "session-id")
        for record in sent
        for name in record.headers
    )


def test_paid_1_claude_code_translated_to_a_metered_openai_key(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    _client("claude")
    pool = _metered_pool(make_pool)
    run = _claude(pool, tmp_path, "-p", "--model", "gpt-5", "say hi")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    _served_by_the_key(pool, "messages", "function_call_output")


def test_paid_1_gemini_cli_translated_to_a_metered_openai_key(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    _client("gemini")
    pool = _metered_pool(make_pool)
    run = _gemini(pool, tmp_path, "-p", "say hi", "-m", "gpt-5")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert ANSWER in run.stdout
    _served_by_the_key(pool, "gemini", "function_call_output")
