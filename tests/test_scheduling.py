"""Scheduling through the gateway against the simulator: affinity, cooldowns, waiting, admission, runtime."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from gateway_pool import Pool, settings_for

from sublane_gateway.testing import running_gateway
from sublane_sim import Behaviour, SimAccount, Simulator

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}


def _served_by(pool: Pool) -> list[str]:
    """Simulator account IDs that served each model request, in order."""
    return [record.account_id for record in pool.sim.requests(endpoint="codex.responses")]


def _runtime(pool: Pool) -> dict[int, dict[str, object]]:
    answer = pool.admin.get("/api/accounts/runtime")
    assert answer.status_code == 200, answer.text
    return {account["id"]: account for account in answer.json()["accounts"]}


def test_aff_1_session_header_keeps_a_conversation_on_one_account(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    client = pool.client()
    for _ in range(3):
        client.post("/v1/responses", json=BODY, headers={"session-id": "thread-a"})
    for _ in range(3):
        client.post("/v1/responses", json=BODY, headers={"Session_id": "thread-b"})
    served = _served_by(pool)
    assert len(set(served[:3])) == 1 and len(set(served[3:])) == 1
    assert served[0] != served[3]  # new conversations rotate (AFF-5)


def test_aff_1_prompt_cache_key_is_a_conversation_key_too(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=3)
    for _ in range(4):
        pool.client().post("/v1/responses", json={**BODY, "prompt_cache_key": "cache-1"})
    assert len(set(_served_by(pool))) == 1


def test_aff_5_calls_without_a_key_rotate(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=3)
    for _ in range(6):
        pool.client().post("/v1/responses", json=BODY)
    served = _served_by(pool)
    assert len(set(served)) == 3 and served[:3] == served[3:]


def test_aff_7_bindings_survive_a_restart(sim: Simulator, tmp_path: Path) -> None:
    accounts = [sim.create_account("codex") for _ in range(2)]
    settings = settings_for(sim, tmp_path / "data")
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        for index, account in enumerate(accounts):
            admin.post(
                "/api/accounts/import",
                json={
                    "provider": "codex",
                    "name": f"a{index}",
                    "credentials": account.credentials,
                    "group_ids": [1],
                },
            )
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        client = gateway.client(headers={"authorization": f"Bearer {key}"})
        client.post("/v1/responses", json=BODY, headers={"session-id": "long-thread"})
        first = [record.account_id for record in sim.requests(endpoint="codex.responses")][-1]
    for _ in range(3):  # after a restart the cursor starts empty, yet the binding holds
        with running_gateway(settings) as gateway:
            client = gateway.client(headers={"authorization": f"Bearer {key}"})
            client.post("/v1/responses", json=BODY, headers={"session-id": "long-thread"})
            assert [record.account_id for record in sim.requests(endpoint="codex.responses")][-1] == first


def test_aff_3_a_bound_conversation_is_not_moved_by_a_cooldown(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    client = pool.client()
    headers = {"session-id": "thread-1"}
    client.post("/v1/responses", json=BODY, headers=headers)
    bound = _served_by(pool)[-1]
    pool.sim.script(bound, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="30"))
    assert client.post("/v1/responses", json=BODY, headers=headers).status_code == 429
    again = client.post("/v1/responses", json=BODY, headers=headers)
    assert again.status_code == 429
    assert again.json()["error"]["code"] == "account_cooling"
    assert 1 <= int(again.headers["retry-after"]) <= 30
    assert _served_by(pool).count(bound) == 2 and len(_served_by(pool)) == 2  # never moved, never waited


def test_wait_9_new_requests_skip_a_cooling_account(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    first = pool.sim_accounts[0].id
    pool.sim.script(first, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="30"))
    client = pool.client()
    statuses = [client.post("/v1/responses", json=BODY).status_code for _ in range(4)]
    assert statuses == [200] * 4  # the one that met the 429 moved on to the other account (FAIL-1)
    assert _served_by(pool).count(first) == 1  # only the request that met the 429


def test_cool_6_resume_clears_the_cooldown_and_the_account_serves_again(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    )
    assert pool.client().post("/v1/responses", json=BODY).status_code == 429
    state = _runtime(pool)[account_id]
    assert state["state"] == "cooling" and state["cooldown_reason"] and state["cooldown_until"]
    assert pool.client().post("/v1/responses", json=BODY).json()["error"]["code"] == "account_cooling"
    resumed = pool.admin.post(f"/api/accounts/{account_id}/resume")
    assert resumed.status_code == 200 and resumed.json()["state"] == "ready"
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200
    assert pool.admin.post("/api/accounts/999/resume").status_code == 404


def test_cool_7_cooldowns_survive_a_restart(sim: Simulator, tmp_path: Path) -> None:
    account = sim.create_account("codex")
    settings = settings_for(sim, tmp_path / "data")
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        body = {"provider": "codex", "name": "a", "credentials": account.credentials, "group_ids": [1]}
        admin.post("/api/accounts/import", json=body)
        key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        sim.script(account.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="120"))
        client = gateway.client(headers={"authorization": f"Bearer {key}"})
        assert client.post("/v1/responses", json=BODY).status_code == 429
    with running_gateway(settings) as gateway:
        client = gateway.client(headers={"authorization": f"Bearer {key}"})
        response = client.post("/v1/responses", json=BODY)
        assert response.json()["error"]["code"] == "account_cooling"
    assert sim.counters(account.id).model_requests == 1


def test_mcool_1_repeated_5xx_cool_the_model_only(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(model_failure_threshold=2)
    account = pool.sim_accounts[0].id
    pool.sim.script(account, *[Behaviour.error(500)] * 6)
    client = pool.client()
    assert client.post("/v1/responses", json=BODY).status_code == 502  # 3 attempts: one logical failure
    assert client.post("/v1/responses", json=BODY).status_code == 502
    cooled = client.post("/v1/responses", json=BODY)
    assert cooled.status_code == 429 and cooled.json()["error"]["code"] == "model_cooling"
    state = _runtime(pool)[pool.account_ids[0]]
    assert state["state"] == "model_limited"
    assert [item["model"] for item in state["limited_models"]] == ["gpt-5-codex"]  # type: ignore[union-attr]
    other = client.post("/v1/responses", json={**BODY, "model": "gpt-5"})
    assert other.status_code == 200  # other models on the account stay eligible (MCOOL-3)


def test_adm_7_raising_a_limit_wakes_waiters_at_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 1})
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=30, pacing_ms=100))
    with concurrent.futures.ThreadPoolExecutor(2) as workers:
        first = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.4)
        second = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.3)
        assert _runtime(pool)[account_id]["waiters"] == 1
        started = time.monotonic()
        pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 2})
        deadline = time.monotonic() + 2
        while pool.sim.counters(pool.sim_accounts[0].id).current_streams < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert time.monotonic() - started < 1.5  # well before the first stream's 3 s end
        assert first.result().status_code == second.result().status_code == 200


def test_adm_3_member_concurrency(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _user, key = pool.member_key("bob", member_concurrency=1)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=10, pacing_ms=60))
    with concurrent.futures.ThreadPoolExecutor(2) as workers:
        running = workers.submit(pool.client(key).post, "/v1/responses", json=BODY)
        time.sleep(0.3)
        refused = pool.client(key).post("/v1/responses", json=BODY)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "member_busy"
        assert running.result().status_code == 200


def test_adm_4_member_requests_per_minute(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _user, key = pool.member_key("bob", rpm=2)
    client = pool.client(key)
    assert [client.post("/v1/responses", json=BODY).status_code for _ in range(2)] == [200, 200]
    limited = client.post("/v1/responses", json=BODY)
    if limited.status_code == 200:  # the two calls straddled a UTC minute (TEAM-1): one more fills it
        limited = client.post("/v1/responses", json=BODY)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "member_rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60


def test_adm_2_workspace_capacity(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(workspace_capacity=1)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=10, pacing_ms=60))
    with concurrent.futures.ThreadPoolExecutor(2) as workers:
        running = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.3)
        busy = pool.client().post("/v1/responses", json=BODY)
        assert busy.status_code == 429 and busy.json()["error"]["code"] == "workspace_busy"
        assert "retry-after" in busy.headers
        assert running.result().status_code == 200


def test_runtime_view_shows_each_state(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=3)
    one, two, three = pool.account_ids
    pool.admin.patch(f"/api/accounts/{two}", json={"enabled": False})
    answer = pool.admin.get("/api/accounts/runtime").json()
    assert answer["workspace"] == {"in_use": 0, "capacity": 128, "waiting": 0}
    states = {account["id"]: account for account in answer["accounts"]}
    assert states[one]["state"] == "ready" and states[two]["state"] == "disabled"
    fields = (
        "in_flight max_concurrency waiters cooldown_until cooldown_reason limited_models auth_state "
        "refresh_retry_at quota provider name enabled"
    )
    for field in fields.split():
        assert field in states[one]
    pool.admin.patch(f"/api/accounts/{three}/limits", json={"max_concurrency": 1})
    pool.sim.set_default(pool.sim_accounts[2].id, Behaviour.ok(deltas=20, pacing_ms=50))
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=20, pacing_ms=50))
    with concurrent.futures.ThreadPoolExecutor(2) as workers:
        jobs = [workers.submit(pool.client().post, "/v1/responses", json=BODY) for _ in range(2)]
        time.sleep(0.4)
        states = _runtime(pool)
        assert states[three]["state"] == "busy" and states[three]["in_flight"] == 1
        assert all(job.result().status_code == 200 for job in jobs)
    member_client = pool.gateway.member(pool.admin, "bob")[1]
    assert member_client.get("/api/accounts/runtime").status_code == 403


def _narrow_and_wide(make_pool: Callable[..., Pool]) -> tuple[Pool, SimAccount, SimAccount]:
    """Two accounts: the first serves only gpt-5-codex, the second also gpt-5.5 (AFF-4 set-up)."""
    pool = make_pool(accounts=2)
    narrow, wide = pool.sim_accounts
    pool.sim.update_account(narrow.id, models=["gpt-5-codex"])
    pool.sim.update_account(wide.id, models=["gpt-5-codex", "gpt-5.5"])
    for account_id in pool.account_ids:
        pool.runtime.catalog.forget(account_id)
    return pool, narrow, wide


def test_aff_4_a_model_switch_with_full_history_may_move(make_pool: Callable[..., Pool]) -> None:
    pool, narrow, wide = _narrow_and_wide(make_pool)
    client = pool.client()
    headers = {"session-id": "switching"}
    client.post("/v1/responses", json=BODY, headers=headers)  # binds to the first account
    assert _served_by(pool)[-1] == narrow.id
    same_model = client.post("/v1/responses", json=BODY, headers=headers)
    assert same_model.status_code == 200 and _served_by(pool)[-1] == narrow.id
    switched = client.post("/v1/responses", json={**BODY, "model": "gpt-5.5"}, headers=headers)
    assert switched.status_code == 200 and _served_by(pool)[-1] == wide.id
    assert (
        pool.finished[-1].routing is not None and pool.finished[-1].routing["rule"] == "model_switch_rotation"
    )
    back = client.post("/v1/responses", json=BODY, headers=headers)  # the binding moved with it
    assert back.status_code == 200 and _served_by(pool)[-1] == wide.id


def test_aff_4_an_upstream_continuation_never_moves(make_pool: Callable[..., Pool]) -> None:
    pool, narrow, _wide = _narrow_and_wide(make_pool)
    client = pool.client()
    headers = {"session-id": "continuing"}
    client.post("/v1/responses", json=BODY, headers=headers)
    refused = client.post(
        "/v1/responses", json={**BODY, "model": "gpt-5.5", "previous_response_id": "resp_1"}, headers=headers
    )
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found"
    assert _served_by(pool) == [narrow.id]


def test_adm_10_model_discovery_takes_no_model_slot(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    listed = pool.client().get("/v1/models")
    assert listed.status_code == 200
    assert pool.sim.counters(pool.sim_accounts[0].id).by_endpoint["codex.models"] == 1
    assert pool.runtime.leases.acquired_total == 0
    assert pool.runtime.scheduler.admission.in_use == 0


def test_cool_8_legacy_account_wide_transient_penalties_are_cleared_real_rate_limits_kept(
    sim: Simulator, tmp_path: Path
) -> None:
    from sqlmodel import Session

    from sublane_core import AccountCooldown

    accounts = [sim.create_account("codex") for _ in range(2)]
    settings = settings_for(sim, tmp_path / "data")
    with running_gateway(settings) as gateway:
        admin = gateway.admin()
        ids = [
            admin.post(
                "/api/accounts/import",
                json={
                    "provider": "codex",
                    "name": f"a{index}",
                    "credentials": account.credentials,
                    "group_ids": [1],
                },
            ).json()["id"]
            for index, account in enumerate(accounts)
        ]
        until = gateway.clock.time() + 600
        with Session(gateway.engine) as db:
            db.add(
                AccountCooldown(account_id=ids[0], model="", until=until, reason="transient", updated_at=0)
            )
            db.add(
                AccountCooldown(
                    account_id=ids[1], model="", until=until, reason="rate_limit_exceeded", updated_at=0
                )
            )
            db.commit()
    with running_gateway(settings) as gateway:
        states = {
            item["id"]: item["state"]
            for item in gateway.admin().get("/api/accounts/runtime").json()["accounts"]
        }
        assert states == {ids[0]: "ready", ids[1]: "cooling"}


def test_aff_4_the_same_model_never_moves_even_when_the_account_stops_listing_it(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    client = pool.client()
    headers = {"session-id": "same-model"}
    client.post("/v1/responses", json=BODY, headers=headers)
    bound = _served_by(pool)[-1]
    pool.sim.update_account(bound, models=["gpt-5"])
    for account_id in pool.account_ids:
        pool.runtime.catalog.forget(account_id)
    refused = client.post("/v1/responses", json=BODY, headers=headers)
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "model_not_found", refused.text
    assert _served_by(pool) == [bound]


def test_aff_8_only_eligible_accounts_are_chosen(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=4)
    disabled, outside, reauth, eligible = pool.account_ids
    pool.admin.patch(f"/api/accounts/{disabled}", json={"enabled": False})
    pool.admin.put("/api/groups/1/accounts", json={"account_ids": [disabled, reauth, eligible]})
    pool.sim.revoke_refresh_token(pool.sim_accounts[2].id)
    pool.sim.expire_access_tokens(pool.sim_accounts[2].id)
    client = pool.client()
    for _ in range(4):
        assert client.post("/v1/responses", json=BODY).status_code in (200, 503)
    served = set(_served_by(pool))
    assert pool.sim_accounts[0].id not in served and pool.sim_accounts[1].id not in served
    assert pool.sim_accounts[3].id in served
    assert outside not in {record.account_id for record in pool.finished if record.outcome == "success"}


def test_cred_7_a_bound_conversation_stays_bound_while_its_account_recovers(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    client = pool.client()
    headers = {"session-id": "recovering"}
    client.post("/v1/responses", json=BODY, headers=headers)
    bound = _served_by(pool)[-1]
    pool.sim.revoke_refresh_token(bound)
    pool.sim.expire_access_tokens(bound)
    for _ in range(2):
        refused = client.post("/v1/responses", json=BODY, headers=headers)
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] in ("reauth_required", "no_account_available")
    assert _served_by(pool).count(bound) == 2 and set(_served_by(pool)) == {bound}  # never moved


def test_mcool_4_a_cooling_model_answers_model_cooling_with_a_bounded_retry_after(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(model_failure_threshold=1, model_cooldown_initial_s=40)
    pool.sim.script(pool.sim_accounts[0].id, *[Behaviour.error(500)] * 3)
    client = pool.client()
    assert client.post("/v1/responses", json=BODY).status_code == 502
    cooled = client.post("/v1/responses", json=BODY)
    assert cooled.status_code == 429 and cooled.json()["error"]["code"] == "model_cooling"
    assert 1 <= int(cooled.headers["retry-after"]) <= 40


def test_retry_2_retries_keep_one_lease_one_id_one_record(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(502), Behaviour.error(503))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 200
    assert pool.runtime.leases.acquired_total == pool.runtime.leases.released_total == 1
    assert [record.request_id for record in pool.finished] == [response.headers["x-request-id"]]
    upstream = pool.sim.requests(endpoint="codex.responses")
    assert len(upstream) == 3


def test_retry_2_a_key_revoked_before_a_retry_stops_it(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    key_id = pool.admin.get("/api/keys").json()["items"][0]["id"]
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(503, header_delay_ms=400), Behaviour.ok())
    with concurrent.futures.ThreadPoolExecutor(1) as workers:
        pending = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.2)
        pool.admin.delete(f"/api/keys/{key_id}")
        response = pending.result()
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"
    assert len(pool.sim.requests(endpoint="codex.responses")) == 1  # the retry never went out


def _retry_after_change(pool: Pool, change: Callable[[], object], key: str | None = None) -> httpx.Response:
    """A call whose first attempt fails with a retryable 503; ``change`` runs during that attempt."""
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(503, header_delay_ms=400), Behaviour.ok())
    with concurrent.futures.ThreadPoolExecutor(1) as workers:
        pending = workers.submit(pool.client(key).post, "/v1/responses", json=BODY)
        time.sleep(0.2)
        change()
        return pending.result()


def test_retry_2_an_account_disabled_before_a_retry_does_not_serve_it(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    response = _retry_after_change(
        pool, lambda: pool.admin.patch(f"/api/accounts/{account_id}", json={"enabled": False})
    )
    assert response.status_code == 503 and response.json()["error"]["code"] == "no_account_available"
    assert len(pool.sim.requests(endpoint="codex.responses")) == 1  # the retry never went out
    assert [record.request_id for record in pool.finished] == [response.headers["x-request-id"]]
    assert pool.runtime.leases.acquired_total == pool.runtime.leases.released_total == 1


def test_retry_2_an_account_removed_from_the_group_before_a_retry_does_not_serve_it(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    response = _retry_after_change(
        pool, lambda: pool.admin.put("/api/groups/1/accounts", json={"account_ids": []})
    )
    assert response.status_code == 503 and response.json()["error"]["code"] == "no_account_available"
    assert len(pool.sim.requests(endpoint="codex.responses")) == 1


def test_retry_2_a_token_budget_used_up_before_a_retry_stops_it(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    bob, key = pool.member_key("bob")
    assert pool.client(key).post("/v1/responses", json=BODY).status_code == 200  # some usage today

    def used() -> int:
        rules = pool.admin.put(
            f"/api/users/{bob['id']}/budgets", json={"rules": [{"period": "day", "limit": 10**9}]}
        ).json()["rules"]
        return int(rules[0]["used"])

    deadline = time.monotonic() + 5
    while used() == 0:  # the first call's usage is written by the history writer
        assert time.monotonic() < deadline
        time.sleep(0.05)

    def budget_used_up() -> None:
        rules = {"rules": [{"period": "day", "limit": 1}]}
        assert pool.admin.put(f"/api/users/{bob['id']}/budgets", json=rules).status_code == 200

    response = _retry_after_change(pool, budget_used_up, key)
    assert response.status_code == 429 and response.json()["error"]["code"] == "token_budget_exceeded"
    assert len(pool.sim.requests(endpoint="codex.responses")) == 2  # the first call, this one's first try


def test_wait_8_local_rejections_never_touch_running_streams_or_count_as_failures(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(wait_timeout_s=0.2, wait_queue_max=1)
    account_id = pool.account_ids[0]
    pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 1})
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=15, pacing_ms=60))
    with concurrent.futures.ThreadPoolExecutor(4) as workers:
        running = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.2)
        rejected = [workers.submit(pool.client().post, "/v1/responses", json=BODY) for _ in range(3)]
        codes = sorted(job.result().json()["error"]["code"] for job in rejected)
        assert set(codes) <= {"account_queue_full", "account_wait_timeout"} and len(codes) == 3
        assert "response.completed" in running.result().text
    # The running stream's lease is released just after its last bytes reach the client.
    deadline = time.monotonic() + 5
    while (state := _runtime(pool)[account_id])["state"] == "busy" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert state["state"] == "ready" and state["limited_models"] == [] and state["cooldown_until"] is None


README = Path(__file__).resolve().parents[1] / "README.md"


def test_store_3_the_readme_says_how_to_back_up_the_database_with_its_key() -> None:
    readme = README.read_text()
    assert "credentials.key" in readme and "back up" in readme.lower()


def test_aff_9_the_readme_says_to_run_one_process_per_database() -> None:
    assert "one SubLane process per database" in README.read_text()


def test_runtime_view_shows_refresh_backoff_reauth_and_quota_exhausted(
    make_pool: Callable[..., Pool],
) -> None:
    from sublane_sim import RefreshOutcome

    pool = make_pool(accounts=3, account_options={"access_ttl_s": 100})  # every token is due for refresh
    backoff, reauth, exhausted = pool.account_ids
    pool.sim.script_refresh(pool.sim_accounts[0].id, RefreshOutcome(kind="error", status=500))
    pool.sim.revoke_refresh_token(pool.sim_accounts[1].id)
    pool.sim.set_quota(pool.sim_accounts[2].id, "primary", used_percent=100, reset_in_s=3600)
    pool.admin.put("/api/groups/1/accounts", json={"account_ids": [exhausted]})
    refused = pool.client().post("/v1/responses", json=BODY)  # the upstream's usage limit: observed
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "quota_exhausted"
    headers = {"session-id": "a"}
    pool.admin.put("/api/groups/1/accounts", json={"account_ids": [backoff]})
    pool.client().post("/v1/responses", json=BODY, headers=headers)
    pool.admin.put("/api/groups/1/accounts", json={"account_ids": [reauth]})
    pool.client().post("/v1/responses", json=BODY, headers={"session-id": "b"})
    states = _runtime(pool)
    assert states[backoff]["state"] == "refresh_backoff" and states[backoff]["refresh_retry_at"]
    assert states[reauth]["state"] == "reauth_required" and states[reauth]["auth_state"] == "reauth_required"
    assert states[exhausted]["state"] == "quota_exhausted"
    quota = states[exhausted]["quota"]
    assert isinstance(quota, list) and quota[0]["fresh"] is True and quota[0]["used_percent"] == 100.0


def test_store_2_runtime_state_and_history_belong_to_their_workspace(make_pool: Callable[..., Pool]) -> None:
    first, second = make_pool(), make_pool()
    first.sim.script(
        first.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="60")
    )
    first.client().post("/v1/responses", json=BODY, headers={"session-id": "shared-key"})
    second.client().post("/v1/responses", json=BODY, headers={"session-id": "shared-key"})
    assert _runtime(first)[first.account_ids[0]]["state"] == "cooling"
    assert _runtime(second)[second.account_ids[0]]["state"] == "ready"  # another workspace: untouched
    first_ids = {item["request_id"] for item in first.admin.get("/api/requests").json()["items"]}
    second_ids = {item["request_id"] for item in second.admin.get("/api/requests").json()["items"]}
    assert first_ids and second_ids and not first_ids & second_ids
