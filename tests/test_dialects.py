"""Each provider's dialect reaches its upstream through the generic translation (issue #31).

The translation in ``sublane-protocols`` knows no provider: what an upstream refuses, drops or
requires of its protocol is data its provider declares (``ProviderAdapter.dialect``). These tests
drive real clients' protocols through the gateway onto the simulator's accounts and read what each
upstream received.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from gateway_pool import Pool
from test_structured_output import _sent

IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."


@pytest.fixture
def pool(make_pool: Callable[..., Pool]) -> Pool:
    pool = make_pool(provider="codex")
    pool.add_account("claude", "claude-1")
    return pool


def _system_texts(sent: dict[str, Any]) -> list[str]:
    return [block["text"] for block in sent["system"]]


def test_a_translated_call_to_claude_leads_its_system_with_the_claude_code_identity_once(pool: Pool) -> None:
    """PROTOCOLS §2.2: OAuth tokens need the identity as the first ``system`` block."""
    chat = {
        "model": "claude/claude-sonnet-5-5",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
    }
    assert pool.client().post("/v1/chat/completions", json=chat).status_code == 200
    assert _system_texts(_sent(pool, "claude")) == [IDENTITY, "Be brief."]
    responses = {
        "model": "claude/claude-sonnet-5-5",
        "input": "hi",
        "instructions": f"{IDENTITY}\n\nBe brief.",
    }
    assert pool.client().post("/v1/responses", json=responses).status_code == 200
    assert _system_texts(_sent(pool, "claude")) == [IDENTITY, "Be brief."]
    bare = {"model": "claude/claude-sonnet-5-5", "input": "hi"}
    assert pool.client().post("/v1/responses", json=bare).status_code == 200
    assert _system_texts(_sent(pool, "claude")) == [IDENTITY]


def test_a_translated_call_to_codex_carries_what_the_backend_requires(pool: Pool) -> None:
    """The Codex backend takes only ``store: false`` streams and refuses sampling settings."""
    messages = {
        "model": "codex/gpt-5-codex",
        "max_tokens": 100,
        "temperature": 0.5,
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert pool.client().post("/v1/messages", json=messages).status_code == 200
    sent = _sent(pool, "codex")
    assert (sent["store"], sent["stream"]) == (False, True)
    assert not {"temperature", "max_output_tokens"} & set(sent)
    stopped = pool.client().post("/v1/messages", json={**messages, "stop_sequences": ["END"]})
    assert stopped.status_code == 400
    assert stopped.json()["error"]["type"] == "invalid_request_error"
    assert "Stop sequences" in stopped.json()["error"]["message"]
