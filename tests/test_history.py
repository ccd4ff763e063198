"""Request records through the whole gateway (SPEC §13 HIST-1…13, the history routes of §14).

Calls go through the real gateway to the upstream simulator; history is read back through the
management API as admins and members read it. Large volumes are queued through the gateway's own
recorder instead of thousands of HTTP calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import sqlalchemy as sa
import websockets
from gateway_pool import Pool

from sublane_core import new_request_id, signals
from sublane_history import HistoryRecorder, cache_hit_rate
from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True, "store": False}
DAY = 86_400.0
RECORD_FIELDS = [
    "id", "request_id", "started_at", "duration_ms", "first_token_ms", "user_id", "username", "key_id",
    "key_name", "group_id", "account_id", "account_name", "provider", "model", "protocol", "operation",
    "outcome", "error_code", "upstream_status", "input_tokens", "output_tokens", "cached_tokens",
    "cache_hit_rate", "routing",
]  # fmt: skip
HIST_2_COLUMNS = {
    "id", "request_id", "started_at", "duration_ms", "first_token_ms", "user_id", "key_id", "group_id",
    "account_id", "provider", "model", "protocol", "operation", "outcome", "error_code", "upstream_status",
    "input_tokens", "output_tokens", "cached_tokens", "routing",
    "served_model",  # the model an alias was served as (ALIAS-1)
    "cache_miss_reason",  # why a later turn missed the prompt cache (COST-4)
    "cache_write_tokens", "cost_usd",  # COST-2
    "timing",  # where time went (OPS-13)
}  # fmt: skip


# -- helpers ---------------------------------------------------------------------------------------


def _get(client: httpx.Client, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _items(client: httpx.Client, path: str = "/api/requests", **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = _get(client, path, **params)["items"]
    return items


def _by_id(client: httpx.Client, path: str = "/api/requests") -> dict[str, dict[str, Any]]:
    return {item["request_id"]: item for item in _items(client, path)}


def _recorder(pool: Pool) -> HistoryRecorder:
    recorder: HistoryRecorder = pool.gateway.app.state.history
    return recorder


def _stored(pool: Pool) -> list[dict[str, Any]]:
    """The raw rows, as the database holds them."""
    _recorder(pool).flush()
    with pool.gateway.engine.connect() as connection:
        rows = connection.execute(sa.text("SELECT * FROM request_records ORDER BY id"))
        return [dict(row) for row in rows.mappings()]


def _member(pool: Pool, name: str) -> tuple[int, httpx.Client, httpx.Client, int]:
    """A member with their own key: (user ID, signed-in web client, key client, key ID)."""
    user, web = pool.gateway.member(pool.admin, name)
    key = web.post("/api/me/keys", json={"name": f"{name}-laptop", "group_id": 1})
    assert key.status_code == 201, key.text
    return user["id"], web, pool.client(key.json()["secret"]), key.json()["id"]


def _payload(pool: Pool, **fields: Any) -> signals.RequestFinished:
    """A finished attempt of the admin's pool key, for volumes no test should make over HTTP."""
    started = fields.pop("started_at", pool.gateway.clock.time())
    values: dict[str, Any] = {
        "request_id": new_request_id(started),
        "started_at": started,
        "duration_ms": 100,
        "first_token_ms": 20,
        "user_id": 1,
        "key_id": 1,
        "group_id": 1,
        "account_id": pool.account_ids[0],
        "provider": "codex",
        "model": "gpt-5-codex",
        "protocol": "responses",
        "operation": "responses",
        "outcome": "success",
        "upstream_status": 200,
        "input_tokens": 10,
        "output_tokens": 5,
        "cached_tokens": 0,
        "routing": {"rule": "uniform_rotation", "candidates": 1, "excluded": {}},
    }
    values.update(fields)
    return signals.RequestFinished(**values)


def _queue(pool: Pool, payloads: list[signals.RequestFinished]) -> None:
    recorder = _recorder(pool)
    for payload in payloads:
        recorder.record(payload)
    assert recorder.flush()


def _ws_url(pool: Pool) -> str:
    return pool.gateway.url.replace("http://", "ws://") + "/v1/responses"


def _ws_headers(pool: Pool) -> dict[str, str]:
    return {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06"}


async def _ws_turn(ws: Any, frame: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(json.dumps({"type": "response.create", **frame}))
    events = []
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        events.append(event)
        if event["type"] in ("response.completed", "response.incomplete", "response.failed", "error"):
            return events


# -- HIST-1: what is recorded ----------------------------------------------------------------------


def test_hist_1_every_attempt_that_reaches_scheduling_is_recorded_rejections_included(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(wait_timeout_s=0.3)
    client = pool.client()
    ok = client.post("/v1/responses", json=BODY)
    pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5"]}})
    refused = client.post("/v1/responses", json=BODY)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"
    pool.admin.patch("/api/groups/1", json={"model_policy": None})
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 1})
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=10, pacing_ms=80))
    with concurrent.futures.ThreadPoolExecutor(1) as workers:
        running = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.25)
        timed_out = client.post("/v1/responses", json=BODY)
        assert timed_out.status_code == 429 and timed_out.json()["error"]["code"] == "account_wait_timeout"
        long = running.result()
    records = _by_id(pool.admin)
    assert len(records) == 4
    expected = {
        ok.headers["x-request-id"]: ("success", None, 200),
        refused.headers["x-request-id"]: ("rejected", "model_not_allowed", None),
        timed_out.headers["x-request-id"]: ("rejected", "account_wait_timeout", None),
        long.headers["x-request-id"]: ("success", None, 200),
    }
    for request_id, (outcome, code, status) in expected.items():
        record = records[request_id]
        assert (record["outcome"], record["error_code"], record["upstream_status"]) == (outcome, code, status)
    assert records[refused.headers["x-request-id"]]["account_id"] is None


async def test_hist_1_prewarm_auth_and_validation_failures_make_no_record(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    client = pool.client()
    assert pool.client("sl_not-a-key").post("/v1/responses", json=BODY).status_code == 401
    assert client.post("/v1/responses", json={"input": "no model"}).status_code == 400
    bad_json = client.post("/v1/responses", content=b"{", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400
    wrong_type = client.post("/v1/responses", content=b"model=x", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 415
    chat = client.post("/v1/chat/completions", json={"model": "gpt-5-codex", "messages": "not a list"})
    assert chat.status_code == 400
    assert client.get("/v1/models").status_code == 200  # model discovery
    async with websockets.connect(_ws_url(pool), additional_headers=_ws_headers(pool)) as ws:
        prewarm = await _ws_turn(ws, {**BODY, "generate": False})
        assert prewarm[-1]["type"] == "response.completed"
    assert _items(pool.admin) == [] and _stored(pool) == []
    assert _get(pool.admin, "/api/requests/filters")["models"] == []


def test_hist_1_workspace_admission_rejections_make_no_record(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(workspace_capacity=1)
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=10, pacing_ms=60))
    with concurrent.futures.ThreadPoolExecutor(1) as workers:
        running = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        time.sleep(0.3)
        busy = pool.client().post("/v1/responses", json=BODY)
        assert busy.status_code == 429 and busy.json()["error"]["code"] == "workspace_busy"
        assert running.result().status_code == 200
    assert [item["outcome"] for item in _items(pool.admin)] == ["success"]


# -- HIST-2: what a record holds -------------------------------------------------------------------


def test_hist_2_records_hold_metadata_never_prompts_keys_headers_or_addresses(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    prompt = "the purple elephant recites pi 3.14159"
    headers = {"session-id": "session-7f3a9c", "x-forwarded-for": "203.0.113.77"}
    response = pool.client().post(
        "/v1/responses", json={**BODY, "input": prompt, "prompt_cache_key": "thread-9b2e"}, headers=headers
    )
    assert response.status_code == 200
    rows = _stored(pool)
    assert len(rows) == 1 and set(rows[0]) == HIST_2_COLUMNS
    stored = json.dumps(rows, default=str)
    for secret in (prompt, "purple", pool.key, "session-7f3a9c", "thread-9b2e", "203.0.113.77", "127.0.0.1"):
        assert secret not in stored
    record = _items(pool.admin)[0]
    assert all(name in record for name in RECORD_FIELDS)
    assert record["user_id"] == 1 and record["username"] == "admin" and record["key_name"] == "pool"
    assert record["group_id"] == 1 and record["account_id"] == pool.account_ids[0]
    assert record["account_name"] == "codex-1" and record["provider"] == "codex"
    assert (record["model"], record["protocol"], record["operation"]) == (
        "gpt-5-codex",
        "responses",
        "responses",
    )
    assert record["duration_ms"] >= record["first_token_ms"] >= 0
    assert record["started_at"] <= time.time() + 1


def test_hist_2_token_counts_are_null_when_the_upstream_reported_none(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.cut(2))
    pool.client().post("/v1/responses", json=BODY)
    record = _items(pool.admin)[0]
    assert record["outcome"] == "error" and record["upstream_status"] == 200
    assert (record["input_tokens"], record["output_tokens"], record["cached_tokens"]) == (None, None, None)
    assert record["cache_hit_rate"] == "—"


# -- HIST-3: outcome apart from status -------------------------------------------------------------


def test_hist_3_a_200_stream_that_ends_in_error_is_outcome_error_with_status_200(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.overload(2))
    response = pool.client().post("/v1/responses", json=BODY)
    assert response.status_code == 200  # the client got a 200 stream…
    record = _items(pool.admin)[0]
    assert (record["outcome"], record["upstream_status"]) == ("error", 200)  # …that ended in error
    assert record["error_code"]


def test_hist_3_each_outcome_is_recorded_apart_from_the_upstream_status(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    client = pool.client()
    pool.sim.script(account, Behaviour(kind="incomplete"))
    incomplete = client.post("/v1/responses", json=BODY).headers["x-request-id"]
    pool.sim.script(account, Behaviour.error(400, error_message="bad input"))
    refused = client.post("/v1/responses", json=BODY).headers["x-request-id"]
    pool.sim.script(account, Behaviour.ok(deltas=40, pacing_ms=50))
    with client.stream("POST", "/v1/responses", json=BODY) as stream:
        canceled = stream.headers["x-request-id"]
        next(stream.iter_raw())  # the client leaves after the first bytes
    deadline = time.monotonic() + 8
    while canceled not in _by_id(pool.admin) and time.monotonic() < deadline:
        time.sleep(0.05)
    records = _by_id(pool.admin)
    assert (records[incomplete]["outcome"], records[incomplete]["upstream_status"]) == ("incomplete", 200)
    assert (records[refused]["outcome"], records[refused]["upstream_status"]) == ("error", 400)
    assert (records[canceled]["outcome"], records[canceled]["upstream_status"]) == ("canceled", 200)


# -- HIST-4: request IDs ---------------------------------------------------------------------------


def test_hist_4_a_record_carries_the_request_id_of_its_answer(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    response = pool.client().post("/v1/responses", json=BODY, headers={"x-request-id": "req_mine"})
    request_id = response.headers["x-request-id"]
    assert request_id != "req_mine"
    record = _get(pool.admin, f"/api/requests/{request_id}")
    assert record["request_id"] == request_id and record["routing"] is not None
    assert pool.admin.get("/api/requests/req_mine").status_code == 404
    assert pool.admin.get("/api/requests/" + "x" * 200).status_code == 404


# -- HIST-5: first output --------------------------------------------------------------------------


def test_hist_5_first_output_counts_the_wait_and_is_null_without_a_delta(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account = pool.sim_accounts[0].id
    pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 1})
    pool.sim.set_default(account, Behaviour.ok(deltas=8, pacing_ms=60))
    with concurrent.futures.ThreadPoolExecutor(1) as workers:
        first = workers.submit(pool.client().post, "/v1/responses", json=BODY)
        deadline = time.monotonic() + 5  # the first holds the slot (a fixed sleep races a loaded machine)
        while not pool.runtime.leases.total_in_flight() and time.monotonic() < deadline:
            time.sleep(0.005)
        waited = pool.client().post("/v1/responses", json=BODY)  # waits for the first one's slot
        first.result()
    record = _get(pool.admin, f"/api/requests/{waited.headers['x-request-id']}")
    assert record["first_token_ms"] >= 250  # the ~0.4 s in the queue count (from gateway start)
    assert record["first_token_ms"] <= record["duration_ms"]
    pool.sim.set_default(account, Behaviour())
    pool.sim.script(account, Behaviour.overload(0))
    failed = pool.client().post("/v1/responses", json=BODY)
    record = _get(pool.admin, f"/api/requests/{failed.headers['x-request-id']}")
    assert record["outcome"] == "error" and record["first_token_ms"] is None
    assert record["duration_ms"] is not None


def test_hist_5_the_record_clock_starts_when_the_request_arrives(make_pool: Callable[..., Pool]) -> None:
    """A body that takes 0.6 s to arrive counts in duration and first output: the clock starts with
    the request's head, not after its body was read and its key checked."""
    pool = make_pool()

    def slow_body() -> Iterator[bytes]:
        yield b'{"model": "gpt-5-codex", '
        time.sleep(0.6)
        yield b'"input": "hi", "stream": true}'

    sent_wall = pool.runtime.clock.time()
    response = pool.client().post(
        "/v1/responses", content=slow_body(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    record = _get(pool.admin, f"/api/requests/{response.headers['x-request-id']}")
    assert record["started_at"] <= sent_wall + 0.3
    assert record["duration_ms"] >= 600 and record["first_token_ms"] >= 600


def test_compaction_is_recorded_without_a_first_output(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    body = {"model": "gpt-5-codex", "input": [{"type": "message", "role": "user", "content": "hi"}]}
    response = pool.client().post("/v1/responses/compact", json=body)
    assert response.status_code == 200, response.text
    record = _get(pool.admin, f"/api/requests/{response.headers['x-request-id']}")
    assert (record["protocol"], record["operation"], record["outcome"]) == ("responses", "compact", "success")
    assert record["first_token_ms"] is None and record["duration_ms"] is not None


async def test_responses_over_websocket_are_recorded_turn_by_turn(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    async with websockets.connect(_ws_url(pool), additional_headers=_ws_headers(pool)) as ws:
        first = await _ws_turn(ws, BODY)
        second = await _ws_turn(ws, {**BODY, "previous_response_id": first[-1]["response"]["id"]})
    request_ids = [first[-1]["request_id"], second[-1]["request_id"]]
    items = _items(pool.admin)
    assert [item["request_id"] for item in items] == request_ids[::-1]
    for item in items:
        assert (item["protocol"], item["operation"], item["outcome"]) == (
            "responses_ws",
            "responses",
            "success",
        )
        assert item["first_token_ms"] is not None and item["input_tokens"] is not None


def test_chat_completions_are_recorded(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    chat = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}]}
    client = pool.client()
    plain = client.post("/v1/chat/completions", json=chat)
    streamed = client.post("/v1/chat/completions", json={**chat, "stream": True})
    assert plain.status_code == streamed.status_code == 200
    records = _by_id(pool.admin)
    for response in (plain, streamed):
        record = records[response.headers["x-request-id"]]
        assert (record["protocol"], record["operation"]) == ("chat_completions", "chat")
        assert record["outcome"] == "success" and record["output_tokens"] is not None


# -- HIST-6: retention -----------------------------------------------------------------------------


def test_hist_6_keeps_at_most_5000_records_and_ids_stay_monotonic(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _queue(pool, [_payload(pool) for _ in range(5000)])
    response = pool.client().post("/v1/responses", json=BODY)  # record 5,001
    newest = _get(pool.admin, f"/api/requests/{response.headers['x-request-id']}")
    assert newest["id"] == 5001
    with pool.gateway.engine.connect() as connection:
        count, lowest = connection.execute(sa.text("SELECT count(*), min(id) FROM request_records")).one()
    assert (count, lowest) == (5000, 2)  # the oldest one went, atomically with the write
    again = pool.client().post("/v1/responses", json=BODY)
    assert _get(pool.admin, f"/api/requests/{again.headers['x-request-id']}")["id"] == 5002
    assert [item["id"] for item in _items(pool.admin)][:2] == [5002, 5001]


def test_hist_6_records_go_at_7_days_and_1_second_also_on_read(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(session_ttl_s=30 * 24 * 3600)
    request_id = pool.client().post("/v1/responses", json=BODY).headers["x-request-id"]
    old_id = _get(pool.admin, f"/api/requests/{request_id}")["id"]
    # 30 s short of 7 days: still there, however long this loaded machine took since the call.
    pool.gateway.clock.advance(7 * DAY - 30)
    assert [item["request_id"] for item in _items(pool.admin)] == [request_id]
    pool.gateway.clock.advance(31)  # now 7 days and 1 s (and a little) later; no write in between
    assert _items(pool.admin) == []
    assert _stored(pool) == []  # cleaned up by the read itself
    assert pool.admin.get(f"/api/requests/{request_id}").status_code == 404
    fresh = pool.client().post("/v1/responses", json=BODY)
    assert fresh.status_code == 200, fresh.text
    assert _get(pool.admin, f"/api/requests/{fresh.headers['x-request-id']}")["id"] == old_id + 1


# -- HIST-7: personal history ----------------------------------------------------------------------


def test_hist_7_a_member_cannot_see_another_members_record(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    bob_id, bob_web, bob_key, _bob_key_id = _member(pool, "bob")
    carol_id, carol_web, carol_key, carol_key_id = _member(pool, "carol")
    bobs = bob_key.post("/v1/responses", json=BODY).headers["x-request-id"]
    carols = carol_key.post("/v1/responses", json={**BODY, "model": "gpt-5"}).headers["x-request-id"]
    admins = pool.client().post("/v1/responses", json=BODY).headers["x-request-id"]
    assert set(_by_id(pool.admin)) == {bobs, carols, admins}
    assert set(_by_id(pool.admin, "/api/me/requests")) == {admins}  # an admin's own page is personal too
    mine = _items(bob_web, "/api/me/requests")
    assert [item["request_id"] for item in mine] == [bobs]
    # Not by ID, filter, cursor or parameter:
    assert bob_web.get(f"/api/me/requests/{carols}").status_code == 404
    assert bob_web.get(f"/api/requests/{carols}").status_code == 403
    assert bob_web.get("/api/requests").status_code == 403
    assert bob_web.get("/api/requests/filters").status_code == 403
    for params in (
        {"user_id": carol_id},
        {"scope": "all"},
        {"scope": "admin", "user_id": carol_id, "account_id": pool.account_ids[0]},
        {"cursor": 10**9},
        {"model": "gpt-5"},
    ):
        assert carols not in {item["request_id"] for item in _items(bob_web, "/api/me/requests", **params)}
    assert _items(bob_web, "/api/me/requests", key_id=carol_key_id) == []
    assert _items(bob_web, "/api/me/requests", request_id=carols) == []
    assert _get(carol_web, f"/api/me/requests/{carols}")["user_id"] == carol_id
    choices = _get(bob_web, "/api/me/requests/filters")
    assert choices["models"] == ["gpt-5-codex"] and [key["name"] for key in choices["keys"]] == ["bob-laptop"]
    assert "members" not in choices and "accounts" not in choices
    # Subscription accounts are blanked in personal answers, the rest is there.
    record = _get(bob_web, f"/api/me/requests/{bobs}")
    assert record["account_id"] is None and record["account_name"] is None and "account_deleted" not in record
    assert record["user_id"] == bob_id and record["username"] == "bob" and record["key_name"] == "bob-laptop"
    assert "codex-1" not in json.dumps(mine)
    assert bob_web.get("/api/me/requests", params={"cursor": "abc"}).status_code == 400


def test_hist_7_calls_through_revoked_keys_stay_visible_to_their_owner(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    _bob_id, bob_web, bob_key, key_id = _member(pool, "bob")
    request_id = bob_key.post("/v1/responses", json=BODY).headers["x-request-id"]
    assert bob_web.delete(f"/api/me/keys/{key_id}").status_code in (200, 204)
    assert bob_key.post("/v1/responses", json=BODY).status_code == 401  # revoked: not recorded
    mine = _items(bob_web, "/api/me/requests")
    assert [item["request_id"] for item in mine] == [request_id]
    assert mine[0]["key_id"] == key_id and mine[0]["key_name"] == "bob-laptop"
    assert [item["request_id"] for item in _items(bob_web, "/api/me/requests", key_id=key_id)] == [request_id]
    assert _get(bob_web, "/api/me/requests/filters")["keys"] == [{"id": key_id, "name": "bob-laptop"}]


# -- HIST-8: filters and pages ---------------------------------------------------------------------


def test_hist_8_pages_of_50_with_a_cursor(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _queue(pool, [_payload(pool) for _ in range(120)])
    pages: list[list[int]] = []
    params: dict[str, Any] = {}
    while True:
        answer = _get(pool.admin, "/api/requests", **params)
        pages.append([item["id"] for item in answer["items"]])
        if answer["next_cursor"] is None:
            break
        assert isinstance(answer["next_cursor"], str)
        params = {"cursor": answer["next_cursor"]}
    assert [len(page) for page in pages] == [50, 50, 20]
    assert [record_id for page in pages for record_id in page] == list(range(120, 0, -1))


def test_hist_8_every_filter_from_inclusive_until_exclusive(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    bob_id, bob_web, bob_key, bob_key_id = _member(pool, "bob")
    t0 = float(int(pool.gateway.clock.time()) - 3600)
    one, two = pool.account_ids
    _queue(
        pool,
        [
            _payload(pool, started_at=t0, request_id="req_first"),
            _payload(pool, started_at=t0 + 10, outcome="error", error_code="upstream_error"),
            _payload(pool, started_at=t0 + 20, model="gpt-5", account_id=two),
            _payload(pool, started_at=t0 + 30, user_id=bob_id, key_id=bob_key_id, outcome="rejected"),
        ],
    )

    def ids(client: httpx.Client = pool.admin, path: str = "/api/requests", **params: Any) -> list[int]:
        return [item["id"] for item in _items(client, path, **params)]

    assert ids(outcome="error") == [2] and ids(outcome="rejected") == [4]
    assert ids(model="gpt-5") == [3] and ids(model="gpt") == []
    assert ids(key_id=bob_key_id) == [4] and ids(request_id="req_first") == [1]
    assert ids(user_id=bob_id) == [4] and ids(account_id=two) == [3] and ids(account_id=one) == [4, 2, 1]
    assert ids(**{"from": int(t0 + 10), "until": int(t0 + 30)}) == [3, 2]  # from inclusive, until exclusive
    assert ids(**{"from": int(t0 + 30)}) == [4] and ids(until=int(t0)) == []
    assert ids(**{"from": int(t0 + 20), "until": int(t0 + 10)}) == []  # an empty interval is no error
    assert ids(outcome="", model="", cursor="") == [4, 3, 2, 1]  # empty values mean "any"
    assert ids(bob_web, "/api/me/requests", outcome="rejected") == [4]
    assert ids(bob_web, "/api/me/requests", outcome="success") == []
    for bad in (
        {"cursor": "abc"},
        {"cursor": "-3"},
        {"outcome": "won"},
        {"from": "yesterday"},
        {"user_id": "x"},
    ):
        response = pool.admin.get("/api/requests", params=bad)
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_request"
    assert bob_key.get("/v1/models").status_code == 200


def test_hist_8_filter_choices_come_from_retained_history_without_secrets(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    _bob_id, bob_web, bob_key, _key_id = _member(pool, "bob")
    _queue(pool, [_payload(pool, model="gone-model", started_at=pool.gateway.clock.time() - 8 * DAY)])
    pool.client().post("/v1/responses", json={**BODY, "model": "gpt-5"})
    bob_key.post("/v1/responses", json=BODY)
    admin = _get(pool.admin, "/api/requests/filters")
    assert admin["models"] == ["gpt-5", "gpt-5-codex"]  # nothing from expired records
    assert [key["name"] for key in admin["keys"]] == ["pool", "bob-laptop"]
    assert [member["username"] for member in admin["members"]] == ["admin", "bob"]
    assert admin["accounts"] == [{"id": pool.account_ids[0], "name": "codex-1"}]
    assert admin["outcomes"] == ["success"]
    mine = _get(bob_web, "/api/me/requests/filters")
    assert mine["models"] == ["gpt-5-codex"] and [key["name"] for key in mine["keys"]] == ["bob-laptop"]
    text = json.dumps([admin, mine])
    assert pool.key not in text and "sl_" not in text and "digest" not in text and "hint" not in text


# -- HIST-9: deleted accounts ----------------------------------------------------------------------


def test_hist_9_deleted_accounts_render_as_deleted_and_their_history_stays(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    client = pool.client()
    request_ids = [client.post("/v1/responses", json=BODY).headers["x-request-id"] for _ in range(2)]
    records = _by_id(pool.admin)
    gone = records[request_ids[0]]["account_id"]
    assert pool.admin.delete(f"/api/accounts/{gone}").status_code == 204
    records = _by_id(pool.admin)
    assert set(records) == set(request_ids)  # the history stays
    deleted = [record for record in records.values() if record["account_id"] == gone]
    assert deleted and all(r["account_name"] == "deleted" and r["account_deleted"] for r in deleted)
    kept = [record for record in records.values() if record["account_id"] != gone]
    assert all(r["account_name"] != "deleted" and not r["account_deleted"] for r in kept)
    assert {"id": gone, "name": "deleted"} in _get(pool.admin, "/api/requests/filters")["accounts"]
    assert [item["id"] for item in _items(pool.admin, account_id=gone)] == [r["id"] for r in deleted]


# -- HIST-10: cache hit rate -----------------------------------------------------------------------


def test_hist_10_cache_hit_rate_is_derived_from_the_reported_counts(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    client = pool.client()
    body = {**BODY, "input": "a long enough prompt " * 20, "prompt_cache_key": "thread-1"}
    first = client.post("/v1/responses", json=body).headers["x-request-id"]
    second = client.post("/v1/responses", json=body).headers["x-request-id"]
    records = _by_id(pool.admin)
    assert records[first]["cached_tokens"] == 0 and records[first]["cache_hit_rate"] == "0%"
    warm = records[second]
    assert 0 < warm["cached_tokens"] <= warm["input_tokens"]
    assert warm["cache_hit_rate"] == cache_hit_rate(warm["input_tokens"], warm["cached_tokens"])
    assert warm["cache_hit_rate"].endswith("%") and warm["cache_hit_rate"] != "0%"
    assert not any("cache" in column and "rate" in column for column in _stored(pool)[0])  # no stored column


# -- HIST-11: compact and full IDs -----------------------------------------------------------------


def test_hist_11_records_give_the_full_id_and_a_compact_one(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    request_id = pool.client().post("/v1/responses", json=BODY).headers["x-request-id"]
    item = _items(pool.admin)[0]
    assert item["request_id"] == request_id
    short = item["request_id_short"]
    assert len(short) < len(request_id) and short.startswith("req_…") and request_id.endswith(short[5:])
    assert _get(pool.admin, f"/api/requests/{request_id}")["request_id"] == request_id  # details: full ID


# -- HIST-12: routing explanation ------------------------------------------------------------------


def test_hist_12_each_record_keeps_its_routing_explanation(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=3)
    pool.admin.patch(f"/api/accounts/{pool.account_ids[2]}", json={"enabled": False})
    client = pool.client()
    body = {**BODY, "prompt_cache_key": "thread-r"}
    first = client.post("/v1/responses", json=body).headers["x-request-id"]
    kept = client.post("/v1/responses", json=body).headers["x-request-id"]
    pool.admin.patch("/api/groups/1", json={"model_policy": {"allow": ["gpt-5"]}})
    refused = client.post("/v1/responses", json=body).headers["x-request-id"]
    records = _by_id(pool.admin)
    routing = records[first]["routing"]
    assert routing["rule"] == "uniform_rotation" and routing["candidates"] == 2
    assert routing["excluded"].get("unavailable") == 1
    assert records[kept]["routing"]["rule"] == "kept_binding"
    assert records[refused]["routing"] is None  # rejected before routing
    personal = _get(pool.admin, f"/api/me/requests/{first}")["routing"]
    assert set(personal) <= {"rule", "candidates", "excluded", "rotation", "parent", "refused"}  # codes only
    assert all(isinstance(count, int) for count in personal["excluded"].values())
    assert "codex-" not in json.dumps(personal)


# -- HIST-13: observations, not billing ------------------------------------------------------------


def test_hist_13_counts_are_what_the_upstream_reported_not_billing(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.ok(input_tokens=1234, output_tokens=56, cached_tokens=7)
    )
    pool.client().post("/v1/responses", json=BODY)
    record = _items(pool.admin)[0]
    upstream = pool.sim.requests(endpoint="codex.responses")[-1]
    assert (record["input_tokens"], record["output_tokens"], record["cached_tokens"]) == (1234, 56, 7)
    assert (upstream.input_tokens, upstream.output_tokens, upstream.cached_tokens) == (1234, 56, 7)
    money = ("cost", "price", "billing", "budget", "charge", "usd")
    assert not any(word in field for field in record for word in money)


def test_history_needs_a_signed_in_user(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    anonymous = pool.gateway.client()
    for path in ("/api/requests", "/api/me/requests", "/api/requests/filters", "/api/me/requests/req_x"):
        response = anonymous.get(path)
        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthenticated"


def test_history_enabled_false_records_nothing(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(history_enabled=False)
    assert (
        pool.client()
        .post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi", "stream": True})
        .status_code
        == 200
    )
    assert pool.admin.get("/api/requests").json()["items"] == []
