"""The model catalogue per account (CAT-1…4): discovered, stored, fresh/stale/over-age, refreshed."""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway_pool import Pool, seed_catalogue

BODY = {"model": "gpt-5-codex", "input": "hi", "stream": False}


def _discoveries(pool: Pool, index: int = 0) -> int:
    return pool.sim.counters(pool.sim_accounts[index].id).by_endpoint.get("codex.models", 0)


def _wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_cat_1_a_catalogue_is_discovered_once_and_stored(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    client = pool.client()
    assert client.post("/v1/responses", json=BODY).status_code == 200
    assert client.post("/v1/responses", json=BODY).status_code == 200
    assert _discoveries(pool) == 1  # fresh for 15 minutes
    stored = pool.admin.get(f"/api/accounts/{pool.account_ids[0]}/models").json()
    assert stored["state"] == "fresh" and "gpt-5-codex" in stored["models"]


def test_cat_1_a_stale_catalogue_is_served_and_refreshed_in_the_background(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    client = pool.client()
    assert client.post("/v1/responses", json=BODY).status_code == 200
    pool.runtime.clock.advance(16 * 60)  # stale
    assert client.post("/v1/responses", json=BODY).status_code == 200  # served from the stale one
    _wait_for(lambda: _discoveries(pool) == 2)
    _wait_for(
        lambda: pool.admin.get(f"/api/accounts/{pool.account_ids[0]}/models").json()["state"] == "fresh"
    )


def test_cat_1_an_over_age_catalogue_is_not_used_for_routing(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(codex_base_url="http://127.0.0.1:9/backend-api")  # discovery cannot succeed
    seed_catalogue(pool, ["gpt-5-codex"])
    pool.runtime.clock.advance(25 * 3600)
    refused = pool.client().post("/v1/responses", json=BODY)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "model_catalog_unavailable"
    assert "retry-after" in refused.headers


def test_cat_1_the_refresh_route_discovers_now(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    _wait_for(lambda: _discoveries(pool) == 1)  # the one right after import
    refreshed = pool.admin.post(f"/api/accounts/{account_id}/models/refresh")
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["state"] == "fresh" and _discoveries(pool) == 2
    pool.sim.update_account(pool.sim_accounts[0].id, models=["gpt-5", "gpt-5-codex", "gpt-5.9"])
    again = pool.admin.post(f"/api/accounts/{account_id}/models/refresh").json()
    assert "gpt-5.9" in again["models"] and _discoveries(pool) == 3
    missing = pool.admin.post("/api/accounts/999/models/refresh")
    assert missing.status_code == 404


def test_cat_1_a_stored_catalogue_survives_a_restart_and_disable_forgets_it(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    pool.runtime.catalog._entries.clear()  # as a new process: memory empty, the table kept
    pool.runtime.catalog._loaded = False
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert _discoveries(pool) == 1  # read from the table, not discovered again
    assert pool.admin.patch(f"/api/accounts/{account_id}", json={"enabled": False}).status_code == 200
    assert pool.admin.get(f"/api/accounts/{account_id}/models").json()["state"] == "unknown"


def test_cat_4_a_model_no_account_lists_is_404(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    refused = pool.client().post("/v1/responses", json={**BODY, "model": "gpt-99"})
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found"


def test_cat_3_a_model_of_several_providers_is_owned_by_sublane(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(provider="claude")
    pool.add_account("antigravity", "antigravity-1")
    listed = {model["id"]: model["owned_by"] for model in pool.client().get("/v1/models").json()["data"]}
    assert listed["claude-sonnet-4-6"] == "sublane"  # Claude and Antigravity both list it
    assert listed["claude-opus-4-6"] == "claude"  # Claude's own
    assert listed["gemini-3-flash"] == "antigravity"  # Antigravity's own
    assert list(listed).count("claude-sonnet-4-6") == 1
    one = pool.client().get("/v1/models/claude-sonnet-4-6").json()
    assert one["owned_by"] == "sublane"


def test_cat_1_the_catalogue_is_discovered_right_after_import_and_reauthorization(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()  # no model call at all
    account_id = pool.account_ids[0]
    _wait_for(lambda: _discoveries(pool) == 1)
    _wait_for(lambda: pool.admin.get(f"/api/accounts/{account_id}/models").json()["state"] == "fresh")
    fresh = pool.sim.credentials(pool.sim_accounts[0].id)
    assert (
        pool.admin.post(f"/api/accounts/{account_id}/credentials", json={"credentials": fresh}).status_code
        == 200
    )
    _wait_for(lambda: _discoveries(pool) == 2)  # re-authorization clears it and discovers anew
    _wait_for(lambda: pool.admin.get(f"/api/accounts/{account_id}/models").json()["state"] == "fresh")
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert _discoveries(pool) == 2  # the call found it fresh


def _claude_model_lists(pool: Pool) -> int:
    return pool.sim.counters(pool.sim_accounts[0].id).by_endpoint.get("claude.models", 0)


CLAUDE_BODY = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}


def test_cat_1_the_claude_catalogue_is_read_from_the_upstream_model_list(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(
        provider="claude", account_options={"models": ("claude-haiku-4-5-20251001", "claude-next-7")}
    )
    account_id = pool.account_ids[0]
    _wait_for(lambda: _claude_model_lists(pool) == 1)  # right after import (GET /v1/models)
    _wait_for(lambda: pool.admin.get(f"/api/accounts/{account_id}/models").json()["state"] == "fresh")
    stored = pool.admin.get(f"/api/accounts/{account_id}/models").json()["models"]
    assert sorted(stored) == [
        "claude-haiku-4-5-20251001",
        "claude-next-7",
    ]  # the account's, not a fixed list
    listed = {model["id"] for model in pool.client().get("/v1/models").json()["data"]}
    assert listed == {"claude-next-7", "claude-haiku-4-5-20251001"}
    api = pool.client()
    assert api.post("/v1/messages", json=CLAUDE_BODY).status_code == 200  # CAT-2: the undated alias
    assert api.post("/v1/messages", json={**CLAUDE_BODY, "model": "claude-next-7"}).status_code == 200
    assert api.post("/v1/messages", json={**CLAUDE_BODY, "model": "claude-opus-4-1"}).status_code == 404
    refreshed = pool.admin.post(f"/api/accounts/{account_id}/models/refresh")
    assert refreshed.status_code == 200 and _claude_model_lists(pool) == 2  # admins refresh it too


def test_cat_1_the_built_in_claude_list_stands_in_when_the_model_list_is_refused(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(provider="claude", account_options={"models_listable": False})
    account_id = pool.account_ids[0]
    _wait_for(lambda: pool.admin.get(f"/api/accounts/{account_id}/models").json()["state"] == "fresh")
    assert _claude_model_lists(pool) >= 1
    stored = pool.admin.get(f"/api/accounts/{account_id}/models").json()["models"]
    assert "claude-haiku-4-5-20251001" in stored  # the built-in list
    assert pool.client().post("/v1/messages", json=CLAUDE_BODY).status_code == 200


def test_cat_1_without_the_fallback_a_refused_claude_model_list_is_a_failed_discovery(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(
        provider="claude", account_options={"models_listable": False}, claude_models_fallback=False
    )
    refused = pool.client().post("/v1/messages", json=CLAUDE_BODY)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "model_catalog_unavailable"
    account_id = pool.account_ids[0]
    assert pool.admin.get(f"/api/accounts/{account_id}/models").json()["state"] == "unknown"
