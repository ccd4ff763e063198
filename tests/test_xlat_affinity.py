"""Selection across providers: native preference on a tie (AFF-6), bindings whatever the account's
provider and model switches across providers (XLAT-4, AFF-4), and what the records say (XLAT-5).

The pools hold a Claude and an Antigravity account: both catalogues list ``claude-sonnet-4-6``
(discovered from the simulator), only Antigravity lists ``gemini-3-flash``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from gateway_pool import Pool

SHARED = "claude-sonnet-4-6"
GEMINI_ONLY = "gemini-3-flash"
ANTHROPIC = {"anthropic-version": "2023-06-01"}


def _mixed_pool(make_pool: Callable[..., Pool], first: str = "claude") -> tuple[Pool, int, int]:
    """``(pool, claude account id, antigravity account id)``; ``first`` is imported first, so it
    comes first in the directory's order (the order a tie would fall back to)."""
    second = "antigravity" if first == "claude" else "claude"
    pool = make_pool(provider=first)
    pool.add_account(second, f"{second}-1")
    ids = dict(zip((first, second), pool.account_ids, strict=True))
    return pool, ids["claude"], ids["antigravity"]


def _messages(
    client: httpx.Client,
    session: str | None,
    model: str = SHARED,
    history: list[dict[str, Any]] | None = None,
) -> httpx.Response:
    headers = dict(ANTHROPIC, **({"x-claude-code-session-id": session} if session else {}))
    messages = [*(history or []), {"role": "user", "content": "Say hello."}]
    body = {"model": model, "max_tokens": 64, "messages": messages}
    return client.post("/v1/messages", json=body, headers=headers)


def _gemini(client: httpx.Client, model: str = SHARED) -> httpx.Response:
    body = {"contents": [{"role": "user", "parts": [{"text": "Say hello."}]}]}
    return client.post(f"/v1beta/models/{model}:generateContent", json=body)


def _responses(client: httpx.Client, session: str, model: str = SHARED) -> httpx.Response:
    body = {"model": model, "input": "Say hello.", "stream": True, "prompt_cache_key": session}
    return client.post("/v1/responses", json=body, headers={"session_id": session})


def _served(pool: Pool) -> int | None:
    return pool.finished[-1].account_id


def test_aff_6_a_tie_prefers_the_native_provider_then_rotates_across_providers(
    make_pool: Callable[..., Pool],
) -> None:
    pool, claude, antigravity = _mixed_pool(make_pool, first="antigravity")
    with pool.client() as client:
        first = _messages(client, None)
        assert first.status_code == 200, first.text
        assert _served(pool) == claude  # Messages' native provider wins the tie
        assert _messages(client, None).status_code == 200
        assert _served(pool) == antigravity  # and the next new selection rotates (AFF-5)


def test_aff_6_the_gemini_protocol_prefers_antigravity_on_a_tie(make_pool: Callable[..., Pool]) -> None:
    pool, claude, antigravity = _mixed_pool(make_pool)
    with pool.client() as client:
        first = _gemini(client)
        assert first.status_code == 200, first.text
        assert _served(pool) == antigravity
        assert _gemini(client).status_code == 200
        assert _served(pool) == claude


def test_xlat_4_a_conversation_stays_on_its_account_whatever_its_provider(
    make_pool: Callable[..., Pool],
) -> None:
    pool, claude, antigravity = _mixed_pool(make_pool)
    with pool.client() as client:
        assert _messages(client, "conv-a").status_code == 200
        assert _served(pool) == claude
        assert _messages(client, "conv-b").status_code == 200
        assert _served(pool) == antigravity  # a Messages conversation bound to a Gemini-wrapper account
        for _ in range(3):
            for session, account in (("conv-b", antigravity), ("conv-a", claude)):
                answer = _messages(client, session)
                assert answer.status_code == 200, answer.text
                assert _served(pool) == account
    upstream = [r.endpoint for r in pool.sim.requests(account_id=pool.sim_account_of(antigravity).id)]
    assert (
        upstream.count("antigravity.streamGenerateContent") + upstream.count("antigravity.generateContent")
        == 4
    )


def test_xlat_4_a_responses_conversation_binds_to_a_claude_account_and_stays(
    make_pool: Callable[..., Pool],
) -> None:
    pool, claude, antigravity = _mixed_pool(make_pool)
    with pool.client() as client:
        served = set()
        for _ in range(4):
            answer = _responses(client, "codex-thread-1")
            assert answer.status_code == 200 and "response.completed" in answer.text, answer.text
            served.add(_served(pool))
        assert len(served) == 1 and served <= {claude, antigravity}


def test_xlat_4_aff_4_a_model_switch_with_full_history_moves_to_another_provider(
    make_pool: Callable[..., Pool],
) -> None:
    pool, claude, antigravity = _mixed_pool(make_pool)
    history = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello!"}]
    with pool.client() as client:
        assert _messages(client, "conv", history=history).status_code == 200
        assert _served(pool) == claude
        # The client switches to a model only the Antigravity account lists, sending full history:
        switched = _messages(client, "conv", model=GEMINI_ONLY, history=history)
        assert switched.status_code == 200, switched.text
        assert _served(pool) == antigravity
        # and a same-model request afterwards keeps the conversation where it now is (AFF-3)
        assert _messages(client, "conv", model=GEMINI_ONLY, history=history).status_code == 200
        assert _served(pool) == antigravity


def test_xlat_5_records_name_the_clients_protocol_and_the_accounts_provider(
    make_pool: Callable[..., Pool],
) -> None:
    pool, _claude, antigravity = _mixed_pool(make_pool)
    with pool.client() as client:
        body = {"model": GEMINI_ONLY, "input": "Say hello.", "stream": True}
        streamed = client.post("/v1/responses", json=body)
        assert streamed.status_code == 200 and "response.output_text.delta" in streamed.text
    record = pool.finished[-1]
    assert (record.protocol, record.provider, record.account_id) == ("responses", "antigravity", antigravity)
    assert record.outcome == "success"
    assert record.first_token_ms is not None and 0 <= record.first_token_ms <= record.duration_ms
    assert record.output_tokens is not None and record.output_tokens > 0
