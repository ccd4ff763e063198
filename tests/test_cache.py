"""COST-4 through the gateway: each record's ``cache`` object, with the reason a later turn of a
conversation missed the upstream's prompt cache, against the simulator's per-account cache (which
keys Claude's prefix on the system prompt and first message, and forgets it after its lifetime)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from gateway_pool import Pool

from sublane_sim import Behaviour

MODEL = "claude-sonnet-4-6"
SESSION = {"x-claude-code-session-id": "session-cost-4"}


def _turn(pool: Pool, *texts: str, headers: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """One turn whose messages are ``texts`` (user and assistant in turn); its record's view."""
    roles = ("user", "assistant")
    messages = [{"role": roles[index % 2], "content": text} for index, text in enumerate(texts)]
    body = {"model": MODEL, "max_tokens": 64, "messages": messages, "stream": True, **extra}
    response = pool.client().post("/v1/messages", json=body, headers=headers or SESSION)
    assert response.status_code == 200, response.text
    return _record(pool.admin, response.headers["x-request-id"])


def _record(admin: httpx.Client, request_id: str) -> dict[str, Any]:
    response = admin.get(f"/api/requests/{request_id}")
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def _advance(pool: Pool, seconds: float) -> None:
    pool.gateway.clock.advance(seconds)
    pool.sim.clock.advance(seconds)


def test_cost_4_miss_reason_first_turn(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    first = _turn(pool, "hello")
    assert first["cache"] == {"hit_rate": 0.0, "miss_reason": "first_turn"}
    second = _turn(pool, "hello", "hi", "and now?")  # extends it, on the same account, at once
    assert second["cache"]["hit_rate"] > 0.5 and second["cache"]["miss_reason"] is None
    assert pool.finished[-1].cache_miss_reason is None
    assert "session-cost-4" not in repr(second)  # the conversation key is never shown nor stored


def test_cost_4_miss_reason_prefix_changed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    _turn(pool, "hello")
    _turn(pool, "hello", "hi", "more")
    edited = _turn(pool, "HELLO (edited)", "hi", "more", "again")  # the first message rewritten
    assert edited["cache"] == {"hit_rate": 0.0, "miss_reason": "prefix_changed"}


def test_cost_4_miss_reason_expired(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    _turn(pool, "hello")
    _advance(pool, 240)
    kept = _turn(pool, "hello", "hi", "more")  # within Claude's 5 minutes: a hit
    assert kept["cache"]["miss_reason"] is None and kept["cache"]["hit_rate"] > 0.5
    _advance(pool, 301)
    late = _turn(pool, "hello", "hi", "more", "ok", "still there?")
    assert late["cache"] == {"hit_rate": 0.0, "miss_reason": "expired"}


def test_cost_4_an_hour_long_cache_is_not_expired_after_five_minutes(make_pool: Callable[..., Pool]) -> None:
    """A breakpoint asking ``"ttl": "1h"`` gives Claude's cache an hour: a hit after 30 minutes,
    and a miss then (the upstream may evict early) is not called ``expired``."""
    pool = make_pool(provider="claude")
    system = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    _turn(pool, "hello", system=system)
    _advance(pool, 1800)
    kept = _turn(pool, "hello", "hi", "more", system=system)
    assert kept["cache"]["miss_reason"] is None and kept["cache"]["hit_rate"] > 0.5
    _advance(pool, 1800)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(cached_tokens=0))  # evicted early
    evicted = _turn(pool, "hello", "hi", "more", "ok", "go", system=system)
    assert evicted["cache"] == {"hit_rate": 0.0, "miss_reason": "unknown"}


def test_cost_4_miss_reason_account_changed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude", accounts=2)
    first = _turn(pool, "hello")
    bound = first["account_id"]
    response = pool.admin.patch(f"/api/accounts/{bound}", json={"enabled": False})
    assert response.status_code == 200, response.text
    moved = _turn(pool, "hello", "hi", "more")
    assert moved["account_id"] != bound
    assert moved["cache"] == {"hit_rate": 0.0, "miss_reason": "account_changed"}


def test_cost_4_no_miss_reason_outside_a_conversation(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    record = _turn(pool, "hello", headers={"anthropic-version": "2023-06-01"})  # no session
    assert record["cache"] == {"hit_rate": 0.0, "miss_reason": None}


def test_cost_4_usage_summaries_show_hit_rates(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    _turn(pool, "hello")
    _turn(pool, "hello", "hi", "more")
    records = [_record(pool.admin, payload.request_id) for payload in pool.finished]
    cached = sum(record["cached_tokens"] for record in records)
    fed = sum(record["input_tokens"] for record in records)
    pool.gateway.app.state.history.flush()
    team = pool.admin.get("/api/usage", params={"days": 1}).json()
    assert team["totals"]["hit_rate"] == round(cached / fed, 4)
    assert [row["hit_rate"] for row in team["by_model"]] == [round(cached / fed, 4)]
    assert [(row["account_id"], row["input_tokens"]) for row in team["cache_by_account"]] == [
        (pool.account_ids[0], fed)
    ]
    personal = pool.admin.get("/api/me/usage", params={"days": 1}).json()
    assert personal["totals"]["hit_rate"] == round(cached / fed, 4)


def test_cost_4_each_protocol_reports_the_cache(make_pool: Callable[..., Pool]) -> None:
    """Gemini (through Antigravity) and Responses (Codex) turns get their cache object too."""
    gemini = make_pool(provider="antigravity")
    client = gemini.gateway.client(headers={"x-goog-api-key": gemini.key, "session_id": "gemini-thread"})
    contents = [{"role": "user", "parts": [{"text": "say hi"}]}]
    url = "/v1beta/models/gemini-3-flash:generateContent"
    first = client.post(url, json={"contents": contents})
    later = client.post(url, json={"contents": [*contents, {"role": "model", "parts": [{"text": "hi"}]}]})
    assert first.status_code == later.status_code == 200, later.text
    records = [_record(gemini.admin, r.headers["x-request-id"]) for r in (first, later)]
    assert records[0]["cache"] == {"hit_rate": 0.0, "miss_reason": "first_turn"}
    assert records[1]["cache"]["hit_rate"] > 0 and records[1]["cache"]["miss_reason"] in (None, "unknown")
    codex = make_pool()
    responses = codex.client()
    body = {"model": "gpt-5-codex", "instructions": "be brief", "prompt_cache_key": "codex-thread"}
    turn = {"role": "user", "content": "say hi " * 40}
    one = responses.post("/v1/responses", json={**body, "input": [turn]})
    two = responses.post("/v1/responses", json={**body, "input": [turn, turn]})
    other = responses.post("/v1/responses", json={**body, "instructions": "be verbose", "input": [turn] * 3})
    reasons = [_record(codex.admin, r.headers["x-request-id"])["cache"] for r in (one, two, other)]
    assert reasons[0] == {"hit_rate": 0.0, "miss_reason": "first_turn"}
    assert reasons[1]["hit_rate"] > 0.5 and reasons[1]["miss_reason"] is None
    assert reasons[2] == {"hit_rate": 0.0, "miss_reason": "prefix_changed"}
