"""Failover before the first byte (FAIL-1…3), through the gateway against the simulator.

Each test scripts the first account's next answer, sends an unbound request, and checks what the
client got, which accounts the simulator saw, and the one record the request left.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from gateway_pool import Pool

from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True}
RATE_LIMITED = Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="30")


def _served_by(pool: Pool) -> list[str]:
    return [record.account_id for record in pool.sim.requests(endpoint="codex.responses")]


def _records(pool: Pool, count: int, client: Any = None) -> list[dict[str, Any]]:
    reader = client or pool.admin
    path = "/api/requests" if client is None else "/api/me/requests"
    deadline = time.monotonic() + 10
    while True:
        items: list[dict[str, Any]] = reader.get(path).json()["items"]
        if len(items) >= count or time.monotonic() > deadline:
            assert len(items) == count, items
            return items
        time.sleep(0.05)


def _in_flight(pool: Pool, timeout_s: float = 5.0) -> int:
    """Slots still held, once given-back slots have reached the shared state: with Redis, releases
    are sent in batches just after a stream's end (a leaked lease stays counted past the wait)."""
    deadline = time.monotonic() + timeout_s
    while True:
        accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
        held = sum(int(account["in_flight"]) for account in accounts)
        if held == 0 or time.monotonic() > deadline:
            return held
        time.sleep(0.02)


def test_fail_1_unbound_request_moves_on_429(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    first, second = pool.sim_accounts
    pool.sim.script(first.id, RATE_LIMITED)  # a new gateway's rotation starts at the first account
    answer = pool.client().post("/v1/responses", json=BODY)
    assert answer.status_code == 200, answer.text
    assert "response.completed" in answer.text
    assert _served_by(pool) == [first.id, second.id]  # one attempt on each account
    (record,) = _records(pool, 1)
    assert record["request_id"] == answer.headers["x-request-id"]
    assert record["outcome"] == "success" and record["upstream_status"] == 200
    limited_id, served_id = pool.account_ids
    assert record["routing"]["attempts"] == [
        {"account_id": limited_id, "outcome": "error", "error_code": "rate_limit_exceeded"},
        {"account_id": served_id, "outcome": "success", "error_code": None},
    ]
    assert record["account_id"] == served_id
    assert record["routing"]["excluded"].get("tried") == 1
    assert _in_flight(pool) == 0  # each lease given back once
    state = {account["id"]: account for account in pool.admin.get("/api/accounts/runtime").json()["accounts"]}
    assert state[limited_id]["state"] == "cooling"  # the 429 cooled its account as COOL-1 says


CHAT = {"model": "gpt-5-codex", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "gpt-5-codex", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("path", "body", "failure"),
    [
        ("/v1/responses", dict(BODY, stream=False), "503"),  # an explicit 5xx, after RETRY-1's retries
        ("/v1/responses", BODY, "403"),
        ("/v1/chat/completions", CHAT, "429"),  # translated (XLAT)
        ("/v1/messages", MESSAGES, "429"),
        ("/v1/messages", dict(MESSAGES, stream=True), "503"),
    ],
)
def test_fail_1_json_stream_and_translated_requests_move_on(
    make_pool: Callable[..., Pool], path: str, body: dict[str, Any], failure: str
) -> None:
    pool = make_pool(accounts=2)
    first, second = pool.sim_accounts
    if failure == "503":
        pool.sim.script(first.id, *[Behaviour.error(503, error_code="overloaded")] * 3)
    elif failure == "403":
        pool.sim.script(first.id, Behaviour.error(403, error_code="account_deactivated"))
    else:
        pool.sim.script(first.id, RATE_LIMITED)
    answer = pool.client().post(path, json=body)
    assert answer.status_code == 200, answer.text
    served = _served_by(pool)
    assert served[-1] == second.id and set(served[:-1]) == {first.id}
    (record,) = _records(pool, 1)
    assert [attempt["account_id"] for attempt in record["routing"]["attempts"]] == pool.account_ids


def test_fail_1_the_requests_own_faults_never_move_on(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    for account in pool.sim_accounts:
        pool.sim.script(account.id, Behaviour.error(400, error_code="invalid_request_error"))
    answer = pool.client().post("/v1/responses", json=BODY)
    assert answer.status_code == 400
    assert len(_served_by(pool)) == 1  # never tried elsewhere
    (record,) = _records(pool, 1)
    assert "attempts" not in (record["routing"] or {})


def test_fail_1_an_accepted_stream_that_breaks_never_moves_on(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    for account in pool.sim_accounts:
        pool.sim.script(account.id, Behaviour.cut(after_deltas=2))
    answer = pool.client().post("/v1/responses", json=BODY)
    assert answer.status_code == 200  # the stream was accepted: output reached the client
    assert len(_served_by(pool)) == 1


def test_fail_1_at_most_the_configured_number_of_more_accounts(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=4, failover_attempts=1)
    for account in pool.sim_accounts:
        pool.sim.script(account.id, RATE_LIMITED)
    answer = pool.client().post("/v1/responses", json=BODY)
    assert answer.status_code == 429
    assert len(_served_by(pool)) == 2  # the first account and one more


def test_fail_1_failover_off(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2, failover_attempts=0)
    for account in pool.sim_accounts:
        pool.sim.script(account.id, RATE_LIMITED)
    assert pool.client().post("/v1/responses", json=BODY).status_code == 429
    assert len(_served_by(pool)) == 1


def test_fail_2_a_new_conversation_binds_only_to_the_account_that_answered(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=2)
    pool.sim.script(pool.sim_accounts[0].id, RATE_LIMITED)
    client = pool.client()
    headers = {"session-id": "new-thread"}
    assert client.post("/v1/responses", json=BODY, headers=headers).status_code == 200
    limited, answered = _served_by(pool)
    for account in pool.sim_accounts:  # both accounts ready again: only the binding decides now
        pool.sim.clear_script(account.id)
    for account_id in pool.account_ids:
        pool.admin.post(f"/api/accounts/{account_id}/resume")
    for _ in range(3):
        assert client.post("/v1/responses", json=BODY, headers=headers).status_code == 200
    assert _served_by(pool)[2:] == [answered] * 3
    assert limited != answered


def test_fail_2_a_bound_conversation_never_fails_over(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    client = pool.client()
    headers = {"session-id": "old-thread"}
    assert client.post("/v1/responses", json=BODY, headers=headers).status_code == 200
    (bound,) = _served_by(pool)
    pool.sim.script(bound, RATE_LIMITED)
    answer = client.post("/v1/responses", json=BODY, headers=headers)
    assert answer.status_code == 429 and answer.json()["error"]["code"] == "upstream_rate_limited"
    assert _served_by(pool) == [bound, bound]


def test_fail_2_members_see_attempts_without_accounts(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    user, session = pool.gateway.member(pool.admin, "ann")
    secret = pool.admin.post(f"/api/users/{user['id']}/keys", json={"name": "k", "group_id": 1}).json()
    pool.sim.script(pool.sim_accounts[0].id, RATE_LIMITED)
    assert pool.client(secret["secret"]).post("/v1/responses", json=BODY).status_code == 200
    (record,) = _records(pool, 1, client=session)
    assert record["routing"]["attempts"] == [
        {"outcome": "error", "error_code": "rate_limit_exceeded"},
        {"outcome": "success", "error_code": None},
    ]
    assert record["account_id"] is None


def test_fail_3_when_every_attempt_fails_the_last_error_is_the_answer(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    first, second = pool.sim_accounts
    pool.sim.script(first.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="20"))
    pool.sim.script(second.id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="20"))
    answer = pool.client().post("/v1/responses", json=BODY)
    assert answer.status_code == 429
    assert answer.json()["error"]["code"] == "upstream_rate_limited"
    assert 1 <= int(answer.headers["retry-after"]) <= 20
    (record,) = _records(pool, 1)
    assert [attempt["outcome"] for attempt in record["routing"]["attempts"]] == ["error", "error"]
    assert record["account_id"] == record["routing"]["attempts"][-1]["account_id"]
    assert _in_flight(pool) == 0
    # Both accounts cooling now: a new request is refused at once, before any upstream call.
    again = pool.client().post("/v1/responses", json=BODY)
    assert again.status_code == 429 and again.json()["error"]["code"] == "account_cooling"
    assert len(_served_by(pool)) == 2


def test_fail_1_member_rpm_counts_one_logical_request_once(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=2)
    _user, key = pool.member_key("bob", rpm=1)
    pool.sim.script(pool.sim_accounts[0].id, RATE_LIMITED)
    assert pool.client(key).post("/v1/responses", json=BODY).status_code == 200


def _ws_url(pool: Pool) -> str:
    return pool.gateway.url.replace("http://", "ws://") + "/v1/responses"


async def _ws_turn(pool: Pool, model: str) -> list[dict[str, Any]]:

    headers = {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06"}
    frame = {"type": "response.create", "model": model, "input": "say hi", "store": False, "stream": True}
    async with websockets.connect(_ws_url(pool), additional_headers=headers) as ws:
        await ws.send(json.dumps(frame))
        events = []
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
            events.append(event)
            if event["type"] in ("response.completed", "response.incomplete", "response.failed", "error"):
                return events


@pytest.mark.parametrize(
    ("provider", "model", "endpoint"),
    [("codex", "gpt-5-codex", "codex.ws.turn"), ("claude", "claude-sonnet-4-6", "claude.messages")],
)
async def test_fail_1_websocket_turns_move_on(
    make_pool: Callable[..., Pool], provider: str, model: str, endpoint: str
) -> None:
    """A Codex turn meets the 429 as the upstream socket's first frame; a Claude turn (through the
    hub, XLAT-1) as its HTTP answer. Either way the client sees only the second account's answer."""
    pool = make_pool(accounts=2, provider=provider)
    first, second = pool.sim_accounts
    pool.sim.script(first.id, RATE_LIMITED)
    events = await _ws_turn(pool, model)
    assert events[-1]["type"] == "response.completed", events
    assert not [event for event in events if event["type"] == "error"]
    assert [record.account_id for record in pool.sim.requests(endpoint=endpoint)] == [first.id, second.id]
    (finished,) = pool.finished
    assert finished.request_id == events[-1]["request_id"]
    assert finished.account_id == pool.account_ids[1] and finished.outcome == "success"
    assert finished.routing is not None
    assert [attempt["account_id"] for attempt in finished.routing["attempts"]] == pool.account_ids
    assert pool.runtime.leases.total_in_flight() == 0


async def test_fail_3_a_websocket_turn_that_cannot_move_gets_the_upstreams_error_frame(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=1)
    pool.sim.script(pool.sim_accounts[0].id, RATE_LIMITED)
    events = await _ws_turn(pool, "gpt-5-codex")
    assert events[-1]["type"] == "error" and events[-1]["status"] == 429
    assert events[-1]["request_id"].startswith("req_")
    assert pool.finished[0].outcome == "error" and pool.finished[0].upstream_status == 429


def test_fail_1_what_moves_on_and_what_does_not() -> None:
    """The classification behind FAIL-1, one case per row of its table (docs/routing.md)."""
    from sublane_core import SubLaneError
    from sublane_gateway.pipeline._failover import fails_over
    from sublane_gateway.pipeline._send import Unreached, UpstreamRefused
    from sublane_providers import FailureKind, UpstreamFailure

    def refused(kind: FailureKind, status: int) -> UpstreamRefused:
        return UpstreamRefused(UpstreamFailure(kind, status, "code", "message"), 1)

    moves = [
        refused(FailureKind.RATE_LIMITED, 429),
        refused(FailureKind.MODEL_RATE_LIMITED, 429),
        refused(FailureKind.QUOTA_EXHAUSTED, 429),
        refused(FailureKind.FORBIDDEN, 403),
        refused(FailureKind.TRANSIENT, 503),
        Unreached(),
        SubLaneError("reauth_required"),
        SubLaneError("account_refresh_failed"),
        SubLaneError("account_cooling"),
        SubLaneError("quota_exhausted"),
    ]
    stays = [
        refused(FailureKind.CLIENT_ERROR, 400),
        refused(FailureKind.CLIENT_ERROR, 404),
        refused(FailureKind.CLIENT_ERROR, 413),
        refused(FailureKind.CLIENT_ERROR, 422),
        refused(FailureKind.TRANSIENT, 408),
        SubLaneError("upstream_timeout"),  # sent: it may have run
        SubLaneError("upstream_error"),  # broke off after sending
        SubLaneError("member_busy"),
        SubLaneError("member_rate_limited"),
        SubLaneError("token_budget_exceeded"),
        SubLaneError("model_not_allowed"),
        SubLaneError("invalid_api_key"),
    ]
    assert all(fails_over(error) for error in moves)
    assert not any(fails_over(error) for error in stays)
