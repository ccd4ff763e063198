"""Quota-aware selection end to end: the real gateway, the real simulator with scripted quota.

The simulator reports quota as the providers do (``x-codex-*`` and ``anthropic-ratelimit-unified-*``
headers on every answer, ``wham/usage``, ``/api/oauth/usage``, ``:fetchAvailableModels``), answers
"usage limit reached" once a window is full, and counts every quota read, so these tests can see
that nothing reads quota while the pool is idle.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from gateway_pool import Pool, settings_for
from sqlmodel import Session, select

from sublane_core import QuotaObservation
from sublane_gateway.testing import running_gateway
from sublane_quota import FRESH_S
from sublane_sim import QuotaReadOutcome, Simulator

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}
GEMINI_BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}


def served_by(pool: Pool) -> int | None:
    return pool.finished[-1].account_id


def advance(pool: Pool, seconds: float) -> None:
    """Move the gateway's clock and the simulator's together (a reset hours away, without sleeping)."""
    pool.gateway.clock.advance(seconds)
    pool.sim.clock.advance(seconds)


def eventually(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "the condition never became true"
        time.sleep(0.02)


def state_of(pool: Pool, account_id: int) -> dict[str, Any]:
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    return next(account for account in accounts if account["id"] == account_id)


def test_quota_7_two_codex_accounts_one_exhausted_end_to_end(make_pool: Callable[..., Pool]) -> None:
    """The issue's end-to-end test: exhaustion, exclusion, the bound conversation's 403, the reset —
    and no quota read while the pool is idle."""
    pool = make_pool(accounts=2)
    api = pool.client()
    conversation = {"session_id": "conv-exhausted"}
    assert api.post("/v1/responses", json=BODY, headers=conversation).status_code == 200
    exhausted = served_by(pool)
    assert exhausted is not None
    other = next(i for i in pool.account_ids if i != exhausted)
    exhausted_sim = pool.sim_account_of(exhausted).id
    pool.sim.set_quota(exhausted_sim, "primary", used_percent=100, reset_in_s=600)

    # The bound conversation meets the usage limit: an observation, answered 403, not a cooldown.
    first = api.post("/v1/responses", json=BODY, headers=conversation)
    assert first.status_code == 403 and first.json()["error"]["code"] == "quota_exhausted"
    assert 1 <= int(first.headers["retry-after"]) <= FRESH_S
    upstream_calls = pool.sim.counters(exhausted_sim).model_requests
    # From now on it is refused before any upstream call, and never moves to the other account.
    again = api.post("/v1/responses", json=BODY, headers=conversation)
    assert again.status_code == 403 and again.json()["error"]["code"] == "quota_exhausted"
    assert 1 <= int(again.headers["retry-after"]) <= FRESH_S
    assert pool.sim.counters(exhausted_sim).model_requests == upstream_calls
    assert pool.finished[-1].account_id is None or pool.finished[-1].account_id == exhausted
    assert pool.runtime.scheduler.cooldowns.active(exhausted) is None  # no cooldown, no failure
    assert state_of(pool, exhausted)["state"] == "quota_exhausted"  # QUOTA-9

    # New conversations all go to the other account.
    for index in range(10):
        answer = api.post("/v1/responses", json=BODY, headers={"session_id": f"new-{index}"})
        assert answer.status_code == 200 and served_by(pool) == other
    assert pool.sim.counters(exhausted_sim).model_requests == upstream_calls

    # Clear cooldown leaves quota alone (COOL-6).
    assert pool.admin.post(f"/api/accounts/{exhausted}/resume").status_code == 200
    assert api.post("/v1/responses", json=BODY, headers=conversation).status_code == 403

    # Idle: time passes, nobody calls, nothing reads quota (no polling loop).
    reads = pool.sim.quota_reads()
    for _ in range(3):
        advance(pool, 200)
        time.sleep(0.3)
    assert pool.sim.quota_reads() == reads

    # After the reset the conversation is served again, on its own account.
    advance(pool, 600)
    served = api.post("/v1/responses", json=BODY, headers=conversation)
    assert served.status_code == 200 and served_by(pool) == exhausted
    assert state_of(pool, exhausted)["state"] == "ready"
    # Reads happened only because of traffic, and never more than one per account at a time.
    assert pool.sim.quota_reads() - reads <= 2


def test_quota_1_traffic_reads_quota_in_the_background_before_anyone_meets_the_limit(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    exhausted, other = pool.account_ids
    exhausted_sim = pool.sim_account_of(exhausted).id
    pool.sim.set_quota(exhausted_sim, "primary", used_percent=100, reset_in_s=3600)
    pool.sim.script_quota_reads(pool.sim_account_of(other).id)  # (nothing scripted: normal reads)
    api = pool.client()
    api.post("/v1/responses", json=BODY)  # the first call starts reads of both accounts
    eventually(lambda: pool.sim.quota_reads(exhausted_sim) == 1)
    eventually(lambda: pool.runtime.quota.exhausted_until(exhausted, BODY["model"]) is not None)
    calls = pool.sim.counters(exhausted_sim).model_requests
    for _ in range(6):
        assert api.post("/v1/responses", json=BODY).status_code == 200
        assert served_by(pool) == other
    assert pool.sim.counters(exhausted_sim).model_requests == calls
    assert pool.finished[-1].routing is not None
    assert pool.finished[-1].routing["excluded"].get("quota") == 1  # HIST-12


def test_quota_3_a_stale_read_never_means_zero_quota(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    for account_id in pool.account_ids:  # the providers' caches answer a full, already reset window
        pool.sim.script_quota_reads(pool.sim_account_of(account_id).id, QuotaReadOutcome(kind="stale"))
    api = pool.client()
    api.post("/v1/responses", json=BODY, headers={"session_id": "warm"})
    eventually(lambda: pool.sim.quota_reads() >= 1)
    time.sleep(0.2)
    chosen = Counter()
    for index in range(6):
        assert api.post("/v1/responses", json=BODY, headers={"session_id": f"s{index}"}).status_code == 200
        chosen[served_by(pool)] += 1
    assert set(chosen) == set(pool.account_ids)  # both stay in rotation


def test_quota_6_a_failed_refresh_keeps_the_last_observation_until_its_own_deadline(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=1)
    (account_id,) = pool.account_ids
    sim_id = pool.sim_accounts[0].id
    api = pool.client()
    pool.sim.set_quota(sim_id, "primary", used_percent=100, reset_in_s=7200)
    refresher = pool.runtime.quota.refresher
    assert api.post("/v1/responses", json=BODY).status_code == 403  # observed exhausted at t0
    # The first selection also began a read of the empty book; the scripted failure is for the next.
    eventually(lambda: not refresher.reading(account_id))
    reads_before = pool.sim.quota_reads(sim_id)
    pool.sim.script_quota_reads(sim_id, QuotaReadOutcome(kind="error", status=500))
    pool.sim.set_quota(sim_id, "primary", used_percent=0)  # the upstream would say otherwise now
    advance(pool, 100)  # old enough to be refreshed: the next call starts a read, which fails
    refused = api.post("/v1/responses", json=BODY)
    assert refused.status_code == 403
    eventually(lambda: pool.sim.quota_reads(sim_id) > reads_before)
    eventually(lambda: refresher.retry_at(account_id) is not None)
    assert api.post("/v1/responses", json=BODY).status_code == 403  # the last good one, still fresh
    advance(pool, FRESH_S - 100 + 1)  # past its own freshness deadline: it no longer counts
    assert api.post("/v1/responses", json=BODY).status_code == 200


def test_quota_10_pace_is_hidden_beside_a_failed_quota_read(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    (account_id,) = pool.account_ids
    sim_id = pool.sim_accounts[0].id
    api = pool.client()
    pool.sim.set_quota(sim_id, "primary", used_percent=70, reset_in_s=3600)
    refresher = pool.runtime.quota.refresher
    assert api.post("/v1/responses", json=BODY).status_code == 200
    eventually(lambda: not refresher.reading(account_id))

    def primary() -> dict[str, Any]:
        return next(row for row in state_of(pool, account_id)["quota"] if row["window"] == "primary")

    eventually(lambda: primary()["pace_points"] is not None)
    assert state_of(pool, account_id)["quota_retry_at"] is None
    pool.sim.script_quota_reads(sim_id, QuotaReadOutcome(kind="error", status=500))
    advance(pool, 100)  # old enough to be read again, still fresh: the next call's read fails
    assert api.post("/v1/responses", json=BODY).status_code == 200
    eventually(lambda: refresher.retry_at(account_id) is not None)
    row = primary()
    assert row["fresh"] is True and row["used_percent"] is not None
    assert row["pace_points"] is None  # "Last quota read failed": no pace beside it
    assert state_of(pool, account_id)["quota_retry_at"] is not None


def test_quota_5_low_but_positive_quota_leaves_uniform_rotation_unchanged(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    low, full = pool.account_ids
    pool.sim.set_quota(pool.sim_account_of(low).id, "primary", used_percent=97, reset_in_s=3600)
    pool.sim.set_quota(pool.sim_account_of(full).id, "primary", used_percent=2, reset_in_s=3600)
    api = pool.client()
    assert api.post("/v1/responses", json=BODY).status_code == 200  # starts both reads
    quota = pool.runtime.quota
    eventually(lambda: all(quota.remaining(account, BODY["model"]) is not None for account in (low, full)))
    assert quota.remaining(low, BODY["model"]) < 0.05 < quota.remaining(full, BODY["model"])
    chosen = []
    for index in range(20):
        response = api.post("/v1/responses", json=BODY, headers={"session_id": f"c{index}"})
        assert response.status_code == 200
        chosen.append(served_by(pool))
        assert pool.finished[-1].routing is not None
        assert pool.finished[-1].routing["rule"] == "uniform_rotation"
    assert Counter(chosen) == {low: 10, full: 10}  # strictly alternating: weights unchanged
    assert all(first != second for first, second in itertools.pairwise(chosen))


def test_quota_8_disable_and_enable_invalidate_the_observation(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    (account_id,) = pool.account_ids
    sim_id = pool.sim_accounts[0].id
    api = pool.client()
    pool.sim.set_quota(sim_id, "primary", used_percent=100, reset_in_s=3600)
    assert api.post("/v1/responses", json=BODY).status_code == 403
    calls = pool.sim.counters(sim_id).model_requests
    assert api.post("/v1/responses", json=BODY).status_code == 403  # excluded, no upstream call
    assert pool.sim.counters(sim_id).model_requests == calls
    for enabled in (False, True):
        assert pool.admin.patch(f"/api/accounts/{account_id}", json={"enabled": enabled}).status_code == 200
    pool.sim.set_quota(sim_id, "primary", used_percent=0)
    eventually(lambda: pool.runtime.quota.exhausted_until(account_id, BODY["model"]) is None)
    assert api.post("/v1/responses", json=BODY).status_code == 200  # a new lifecycle: asked again
    assert pool.sim.counters(sim_id).model_requests == calls + 1


def test_quota_8_observations_survive_a_restart(sim: Simulator, tmp_path: Path) -> None:
    account = sim.create_account("codex")
    settings = settings_for(sim, tmp_path / "data")
    sim.set_quota(account.id, "primary", used_percent=100, reset_in_s=3600)
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        body = {"provider": "codex", "name": "c", "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        api = gateway.client(headers={"authorization": f"Bearer {key}"})
        assert api.post("/v1/responses", json=BODY).status_code == 403
    calls = sim.counters(account.id).model_requests
    with running_gateway(settings) as gateway:
        api = gateway.client(headers={"authorization": f"Bearer {key}"})
        kept = api.post("/v1/responses", json=BODY)
        assert kept.status_code == 403 and kept.json()["error"]["code"] == "quota_exhausted"
    assert sim.counters(account.id).model_requests == calls  # known from the database, not asked


def test_quota_4_antigravity_excludes_only_the_exhausted_model(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="antigravity")
    (account_id,) = pool.account_ids
    sim_id = pool.sim_accounts[0].id
    pool.sim.set_quota(sim_id, "gemini-3-pro-high", used_percent=100, reset_in_s=3600)
    api = pool.gateway.client(headers={"x-goog-api-key": pool.key})

    def generate(model: str, **kwargs: Any) -> httpx.Response:
        return api.post(f"/v1beta/models/{model}:generateContent", json=GEMINI_BODY, **kwargs)

    assert generate("gemini-3-flash").status_code == 200  # traffic: the per-model quota is read
    eventually(lambda: pool.runtime.quota.exhausted_until(account_id, "gemini-3-pro-high") is not None)
    calls = pool.sim.counters(sim_id).model_requests
    refused = generate("gemini-3-pro-high")
    assert refused.status_code == 403 and "quota_exhausted" in refused.json()["error"]["message"]
    assert pool.sim.counters(sim_id).model_requests == calls
    assert generate("gemini-3-flash").status_code == 200  # the account's other models stay eligible
    rows = {row["window"]: row for row in state_of(pool, account_id)["quota"]}
    assert rows["gemini-3-pro-high"]["used_percent"] == 100 and rows["gemini-3-pro-high"]["fresh"]
    assert state_of(pool, account_id)["state"] != "quota_exhausted"  # not every model is out


def test_quota_7_a_claude_subscription_limit_is_an_observation_not_a_cooldown(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="claude")
    (account_id,) = pool.account_ids
    pool.sim.set_quota(pool.sim_accounts[0].id, "five_hour", used_percent=100, reset_in_s=900)
    body = {"model": "claude-haiku-4-5-20251001", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    api = pool.gateway.client(headers={"x-api-key": pool.key, "anthropic-version": "2023-06-01"})
    refused = api.post("/v1/messages", json=body)
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "permission_error"
    assert "quota_exhausted" in refused.text
    assert pool.runtime.scheduler.cooldowns.active(account_id) is None
    assert state_of(pool, account_id)["state"] == "quota_exhausted"


def test_qw_1_one_thousand_new_conversations_follow_the_remaining_quota(
    make_pool: Callable[..., Pool],
) -> None:
    """With QW on, 1,000 new conversations split 0.8 : 0.3 (the remaining fractions) within ±1
    percentage point of the exact share (the smooth weighted round-robin keeps it within a call or
    two; the tolerance leaves room for the calls that were in flight while observations arrived)."""
    pool = make_pool(accounts=2, gateway_quota_weighted=True)
    roomy, tight = pool.account_ids
    pool.sim.set_quota(pool.sim_account_of(roomy).id, "primary", used_percent=20, reset_in_s=9000)
    pool.sim.set_quota(pool.sim_account_of(tight).id, "primary", used_percent=70, reset_in_s=9000)
    api = pool.client()
    for index in range(2):  # one call each: their answers' headers are the observations
        api.post("/v1/responses", json=BODY, headers={"session_id": f"warm-{index}"})

    def remaining_is(account_id: int, fraction: float) -> Callable[[], bool]:
        return lambda: abs((pool.runtime.quota.remaining(account_id, BODY["model"]) or 0) - fraction) < 1e-9

    eventually(remaining_is(roomy, 0.8))
    eventually(remaining_is(tight, 0.3))
    pool.finished.clear()

    def call(index: int) -> int:
        answer = api.post("/v1/responses", json=BODY, headers={"session_id": f"qw-{index}"})
        assert answer.status_code == 200
        return index

    with ThreadPoolExecutor(4) as workers:
        list(workers.map(call, range(1000)))
    chosen = Counter(record.account_id for record in pool.finished)
    assert sum(chosen.values()) == 1000
    share = chosen[roomy] / 1000
    assert abs(share - 0.8 / 1.1) <= 0.01, chosen
    rules = Counter((record.routing or {}).get("rule") for record in pool.finished)
    assert rules["quota_weighted_rotation"] >= 990


def test_hist_12_refused_during_routing_the_record_keeps_its_explanation(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    user, key = pool.member_key("bob")
    api = pool.client(key)
    conversation = {"session_id": "conv"}
    assert api.post("/v1/responses", json=BODY, headers=conversation).status_code == 200
    bound = served_by(pool)
    assert bound is not None
    pool.sim.set_quota(pool.sim_account_of(bound).id, "primary", used_percent=100, reset_in_s=900)
    assert api.post("/v1/responses", json=BODY, headers=conversation).status_code == 403  # observed
    refused = api.post("/v1/responses", json=BODY, headers=conversation)  # refused while routing
    assert refused.status_code == 403
    request_id = refused.headers["x-request-id"]
    eventually(lambda: pool.admin.get(f"/api/requests/{request_id}").status_code == 200)
    routing = pool.admin.get(f"/api/requests/{request_id}").json()["routing"]
    assert routing == {
        "rule": "kept_binding",
        "candidates": 1,
        "excluded": {"quota": 1},
        "refused": "quota_exhausted",
    }
    new = api.post("/v1/responses", json=BODY, headers={"session_id": "another"})
    assert new.status_code == 200
    request_id = new.headers["x-request-id"]
    eventually(lambda: pool.admin.get(f"/api/requests/{request_id}").status_code == 200)
    member = pool.gateway.login("bob", "member-pass-1")
    mine = member.get(f"/api/me/requests/{request_id}").json()
    assert mine["account_id"] is None and mine["account_name"] is None  # HIST-7
    assert mine["routing"] == {
        "rule": "uniform_rotation",
        "candidates": 1,
        "excluded": {"quota": 1},
        "rotation": "uniform",
    }
    assert user["id"] != 1


def test_quota_2_observations_are_normalized_and_persisted(make_pool: Callable[..., Pool]) -> None:
    """Claude's headers say 0.7 (a fraction, a Unix reset): saved as the window its usage endpoint
    names (``five_hour``, 70 % used, 5 h long, that reset); the endpoint's own percentages and ISO
    resets normalize to the same (``packages/sublane-providers/tests/test_claude_quota.py``)."""
    pool = make_pool(provider="claude")
    (account_id,) = pool.account_ids
    sim_id = pool.sim_accounts[0].id
    pool.sim.set_quota(sim_id, "five_hour", used_percent=70, reset_in_s=9000)
    body = {
        "model": "claude-haiku-4-5-20251001",
        "max_tokens": 32,
        "messages": [{"role": "user", "content": "hi"}],
    }
    api = pool.gateway.client(headers={"x-api-key": pool.key, "anthropic-version": "2023-06-01"})
    assert api.post("/v1/messages", json=body).status_code == 200

    def stored() -> dict[str, QuotaObservation]:
        with Session(pool.gateway.engine) as db:
            rows = db.exec(select(QuotaObservation).where(QuotaObservation.account_id == account_id))
            return {row.window: row for row in rows}

    eventually(lambda: "five_hour" in stored())
    from_headers = stored()["five_hour"]
    assert from_headers.used_percent == 70.0 and from_headers.window_seconds == 5 * 3600
    assert from_headers.main and from_headers.lifecycle_revision == 1
    assert abs((from_headers.resets_at or 0) - (pool.sim.clock.now() + 9000)) < 5
