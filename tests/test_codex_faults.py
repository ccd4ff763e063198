"""How the Codex path meets upstream failures: retries, rate limits, refusals, cancellations."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable

from gateway_pool import Pool, seed_catalogue

from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}


def test_retry_1_explicit_5xx_is_retried_on_the_same_account(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    first = pool.sim_accounts[0].id
    pool.sim.script(first, Behaviour.error(503), Behaviour.error(502))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 200
    assert "response.completed" in response.text
    assert pool.sim.counters(first).model_requests == 3  # two refusals, then the success
    assert pool.sim.counters(pool.sim_accounts[1].id).model_requests == 0
    assert len(pool.finished) == 1 and pool.finished[0].outcome == "success"  # one record, one ID


def test_retry_1_gives_up_after_two_retries(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    pool.sim.script(account, Behaviour.error(500), Behaviour.error(500), Behaviour.error(500))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_error"
    assert pool.sim.counters(account).model_requests == 3
    assert pool.finished[-1].outcome == "error" and pool.finished[-1].upstream_status == 500
    assert pool.runtime.leases.total_in_flight() == 0


def test_retry_4_rate_limits_are_returned_not_replayed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    pool.sim.script(account, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="7"))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "7"
    assert response.json()["error"]["code"] == "upstream_rate_limited"
    assert pool.sim.counters(account).model_requests == 1


def test_cool_1_rate_limit_without_retry_after_uses_the_fallback(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(cooldown_fallback_s=4)
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after=None)
    )
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 429 and response.headers["retry-after"] == "4"


def test_quota_7_usage_limit_reached_is_quota_exhausted_with_a_bounded_retry_after(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    pool.sim.script(
        pool.sim_accounts[0].id,
        Behaviour.error(429, error_code="usage_limit_reached", retry_after=None, resets_in_s=100_000),
    )
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 403 and response.json()["error"]["code"] == "quota_exhausted"
    assert 1 <= int(response.headers["retry-after"]) <= 120  # the next freshness check, not the reset
    assert pool.runtime.scheduler.cooldowns.active(pool.account_ids[0]) is None  # not a cooldown


def test_cred_8_upstream_403_is_upstream_forbidden(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(403))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "upstream_forbidden"
    accounts = pool.admin.get("/api/accounts").json()["items"]
    assert accounts[0]["auth_state"] == "ok"  # not a request for re-authorization


def test_client_errors_are_relayed_with_the_upstream_message(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.error(400, error_message="Unsupported parameter: foo"))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 1


def test_a_200_stream_that_fails_is_an_error_with_status_200(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.overload(2))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 200
    assert "response.failed" in response.text
    record = pool.finished[-1]
    assert record.outcome == "error" and record.upstream_status == 200 and record.error_code


def test_a_cut_stream_is_an_error_and_releases(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.cut(3, cut_mode="eof"))
    response = pool.client().post("/v1/responses", json=BODY)
    assert "response.completed" not in response.text
    assert pool.finished[-1].outcome == "error"
    assert pool.runtime.leases.total_in_flight() == 0


def test_adm_6_client_disconnect_mid_stream_releases_the_slot_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    pool.sim.script(account, Behaviour.ok(deltas=200, pacing_ms=20))
    leases = pool.runtime.leases
    with pool.client() as client, client.stream("POST", "/v1/responses", json=BODY) as response:
        for line in response.iter_lines():
            if "output_text.delta" in line:
                break
        assert leases.in_flight(pool.account_ids[0]) == 1
    deadline = time.monotonic() + 5
    while leases.total_in_flight() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leases.total_in_flight() == 0
    assert leases.acquired_total == leases.released_total == 1
    assert pool.finished[-1].outcome == "canceled"
    deadline = time.monotonic() + 5
    while pool.sim.counters(account).current_streams and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.sim.counters(account).current_streams == 0  # the upstream was closed too


def test_adm_8_usage_is_collected_briefly_after_a_cancel(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(deltas=20, pacing_ms=30))
    with pool.client() as client, client.stream("POST", "/v1/responses", json=BODY) as response:
        for line in response.iter_lines():
            if "output_text.delta" in line:
                break
    deadline = time.monotonic() + 5
    while not pool.finished and time.monotonic() < deadline:
        time.sleep(0.05)
    record = pool.finished[-1]
    assert record.outcome == "canceled"
    assert record.output_tokens is not None  # the terminal usage arrived within the 3 s drain


def test_adm_8_the_post_cancel_drain_ends_after_3_s_while_the_upstream_keeps_streaming(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    pool.sim.script(account, Behaviour.ok(deltas=400, pacing_ms=25))  # 10 s more after the cancel
    leases = pool.runtime.leases
    with pool.client() as client, client.stream("POST", "/v1/responses", json=BODY) as response:
        for line in response.iter_lines():
            if "output_text.delta" in line:
                break
    canceled = time.monotonic()
    while leases.total_in_flight() and time.monotonic() < canceled + 8:
        time.sleep(0.02)
    released = time.monotonic() - canceled
    assert leases.total_in_flight() == 0 and leases.acquired_total == leases.released_total == 1
    assert 2.0 <= released <= 4.5, released  # it kept reading for usage, for at most 3 s
    record = pool.finished[-1]
    assert record.outcome == "canceled" and record.error_code == "client_canceled"
    assert record.output_tokens is None  # no terminal event came within the cap
    deadline = time.monotonic() + 5
    while pool.sim.counters(account).current_streams and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.sim.counters(account).current_streams == 0  # the upstream was closed after the cap


def test_adm_5_slots_never_exceed_max_concurrency_and_waiters_are_served(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 1})
    account = pool.sim_accounts[0].id
    pool.sim.set_default(account, Behaviour.ok(deltas=5, pacing_ms=40))
    with concurrent.futures.ThreadPoolExecutor(4) as workers:
        responses = list(workers.map(lambda _: pool.client().post("/v1/responses", json=BODY), range(4)))
    assert [response.status_code for response in responses] == [200] * 4
    assert pool.sim.counters(account).peak_streams == 1  # they waited their turn (WAIT-1)
    assert pool.runtime.leases.total_in_flight() == 0


def test_wait_2_wait_timeout_and_full_queue_are_429s(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(wait_timeout_s=1.0, wait_queue_max=1)  # the stream ahead runs 2 s
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 1})
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=20, pacing_ms=100))
    with concurrent.futures.ThreadPoolExecutor(3) as workers:
        running = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.3)
        waiting = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.1)
        full = pool.client().post("/v1/responses", json=BODY)
        assert full.status_code == 429 and full.json()["error"]["code"] == "account_queue_full"
        assert full.headers["retry-after"] == "1"
        timed_out = waiting.result()
        assert timed_out.status_code == 429 and timed_out.json()["error"]["code"] == "account_wait_timeout"
        assert timed_out.headers["retry-after"] == "1"
        assert running.result().status_code == 200
    outcomes = sorted(record.error_code or record.outcome for record in pool.finished)
    assert outcomes == ["account_queue_full", "account_wait_timeout", "success"]


def test_unreachable_upstream_is_a_502_and_never_cools(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(codex_base_url="http://127.0.0.1:9/backend-api")
    seed_catalogue(pool, ["gpt-5-codex"])  # as a restart after a good discovery would have it
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "upstream_error"
    assert pool.runtime.leases.total_in_flight() == 0
    assert pool.finished[-1].outcome == "error"


def test_cat_4_an_unknown_catalogue_is_503_model_catalog_unavailable(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(codex_base_url="http://127.0.0.1:9/backend-api")  # discovery cannot reach it
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "model_catalog_unavailable"
    assert int(response.headers["retry-after"]) >= 1
    assert pool.runtime.leases.total_in_flight() == 0


def test_retry_3_a_long_upstream_hint_is_returned_not_waited_out(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    pool.sim.script(account, Behaviour.error(503, retry_after="120"))
    started = time.monotonic()
    response = pool.client().post("/v1/responses", json=BODY)
    assert time.monotonic() - started < 2
    assert response.status_code == 503 and response.headers["retry-after"] == "120"
    assert pool.sim.counters(account).model_requests == 1


def test_time_3_header_timeout_ends_a_silent_upstream(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(header_timeout_s=0.5)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(header_delay_ms=3000))
    started = time.monotonic()
    response = pool.client().post("/v1/responses", json=BODY)
    assert time.monotonic() - started < 2.5
    assert response.status_code == 504 and response.json()["error"]["code"] == "upstream_timeout"
    state = pool.admin.get("/api/accounts/runtime").json()["accounts"][0]
    assert state["state"] == "ready"  # COOL-2: a timeout never cools the account


def test_adm_9_the_request_deadline_ends_a_long_stream(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(request_timeout_s=0.8, sse_heartbeat_s=0.2)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(deltas=100, pacing_ms=50))
    started = time.monotonic()
    response = pool.client().post("/v1/responses", json=BODY)
    assert time.monotonic() - started < 3
    assert "response.completed" not in response.text
    assert pool.finished[-1].error_code == "request_timeout"
    assert pool.runtime.leases.total_in_flight() == 0
    state = pool.admin.get("/api/accounts/runtime").json()["accounts"][0]
    assert state["state"] == "ready" and state["limited_models"] == []  # COOL-2
