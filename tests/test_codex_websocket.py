"""Responses over WebSocket through SubLane, as Codex CLI speaks it, against the simulator."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from gateway_pool import Pool
from websockets.exceptions import InvalidStatus

from sublane_sim import Behaviour

CREATE = {
    "type": "response.create",
    "model": "gpt-5-codex",
    "input": "say hi",
    "store": False,
    "stream": True,
}


def _url(pool: Pool) -> str:
    return pool.gateway.url.replace("http://", "ws://") + "/v1/responses"


def _headers(pool: Pool, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {pool.key}", "openai-beta": "responses_websockets=2026-02-06", **extra}


async def _turn(ws: Any, frame: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(json.dumps(frame))
    events = []
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), 10))
        events.append(event)
        if event["type"] in ("response.completed", "response.incomplete", "response.failed", "error"):
            return events


async def test_hist_4_websocket_turns_carry_their_own_request_ids(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        first = await _turn(ws, CREATE)
        second = await _turn(ws, {**CREATE, "previous_response_id": first[-1]["response"]["id"]})
    for turn in (first, second):
        events = [event for event in turn if event["type"] != "codex.rate_limits"]
        assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
        assert events[0]["request_id"] == events[-1]["request_id"]
        assert "request_id" not in events[1]  # only created/completed/incomplete and errors are tagged
    ids = [first[-1]["request_id"], second[-1]["request_id"]]
    assert ids[0] != ids[1]
    assert [record.request_id for record in pool.finished] == ids
    assert all(record.outcome == "success" and record.protocol == "responses_ws" for record in pool.finished)
    assert pool.runtime.leases.total_in_flight() == 0


async def test_adm_6_an_idle_socket_holds_no_slot(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        await _turn(ws, CREATE)
        assert pool.runtime.leases.total_in_flight() == 0
        await _turn(ws, CREATE)
        assert pool.runtime.leases.acquired_total == pool.runtime.leases.released_total == 2


async def test_hist_1_prewarm_is_forwarded_but_never_recorded(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        prewarm = await _turn(ws, {**CREATE, "generate": False})
        turn = await _turn(ws, CREATE)
    assert prewarm[-1]["type"] == "response.completed" and "request_id" not in prewarm[-1]
    assert turn[-1]["type"] == "response.completed", turn
    assert len(pool.finished) == 1
    upstream = [record.body for record in pool.sim.requests(account_id=pool.sim_accounts[0].id)]
    assert any(body and body.get("generate") is False for body in upstream)


async def test_bad_frames_get_error_frames_and_the_socket_stays_usable(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        await ws.send("not json")
        error = json.loads(await ws.recv())
        assert error["type"] == "error" and error["error"]["code"] == "invalid_json"
        await ws.send(json.dumps({"type": "response.create"}))
        error = json.loads(await ws.recv())
        assert error["error"]["code"] == "invalid_request"
        events = await _turn(ws, CREATE)
        assert events[-1]["type"] == "response.completed"
    assert len(pool.finished) == 1


async def test_a_second_create_while_a_turn_runs_is_refused(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(deltas=10, pacing_ms=40))
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        await ws.send(json.dumps(CREATE))
        while json.loads(await ws.recv())["type"] != "response.created":
            pass
        await ws.send(json.dumps(CREATE))
        seen = []
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
            seen.append(event)
            if event["type"] == "response.completed":
                break
        errors = [event for event in seen if event["type"] == "error"]
        assert len(errors) == 1 and errors[0]["error"]["code"] == "turn_in_progress"
    assert len(pool.finished) == 1


async def test_invalid_key_is_refused_at_the_upgrade(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(_url(pool), additional_headers={"authorization": "Bearer sl_bad"}):
            pass
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body)["error"]["code"] == "invalid_api_key"


async def test_upstream_wrapped_errors_reach_the_client_with_the_request_id(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="5")
    )
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        events = await _turn(ws, CREATE)
        assert events[-1]["type"] == "error"
        assert events[-1]["request_id"].startswith("req_")
        again = await _turn(ws, CREATE)  # the socket stays usable; the account now cools (COOL-1)
        assert again[-1]["error"]["code"] == "account_cooling"
        assert 1 <= int(again[-1]["headers"]["retry-after"]) <= 5
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 1  # never waited on (WAIT-9)
    assert pool.finished[0].outcome == "error" and pool.finished[0].upstream_status == 429
    assert pool.runtime.leases.total_in_flight() == 0


async def test_client_disconnect_mid_turn_releases_the_slot(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(deltas=100, pacing_ms=30))
    ws = await websockets.connect(_url(pool), additional_headers=_headers(pool))
    await ws.send(json.dumps(CREATE))
    while json.loads(await ws.recv())["type"] != "response.created":
        pass
    await ws.close()
    deadline = time.monotonic() + 15  # up to the 3 s usage drain (ADM-8), on a loaded machine
    while pool.runtime.leases.total_in_flight() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert pool.runtime.leases.total_in_flight() == 0
    assert pool.finished[-1].outcome == "canceled"


async def test_ops_1_a_malformed_known_field_on_a_websocket_turn_is_refused_here(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    async with websockets.connect(_url(pool), additional_headers=_headers(pool)) as ws:
        for _ in range(4):  # more than the model failure threshold
            refused = await _turn(ws, {**CREATE, "reasoning": 5})
            assert refused[-1]["type"] == "error", refused
            assert "reasoning" in json.dumps(refused[-1])
        served = await _turn(ws, CREATE)  # the socket and the model are fine
    assert served[-1]["type"] == "response.completed"
    assert pool.sim.counters(pool.sim_accounts[0].id).model_requests == 1  # only the good turn went out
    accounts = pool.admin.get("/api/accounts/runtime").json()["accounts"]
    assert accounts[0]["state"] == "ready" and accounts[0]["limited_models"] == []


async def test_ops_1_a_key_refused_at_the_upgrade_logs_no_error(
    make_pool: Callable[..., Pool], caplog: pytest.LogCaptureFixture
) -> None:
    """Uvicorn's sansio protocol logs 'ASGI callable returned without completing handshake.' at
    ERROR after every denial response (uvicorn PR #3138); a wrong key is not a server error."""
    pool = make_pool()
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    for _ in range(2):
        with pytest.raises(InvalidStatus) as refused:
            async with websockets.connect(_url(pool), additional_headers={"authorization": "Bearer sl_bad"}):
                pass
        assert refused.value.response.status_code == 401
    async with websockets.connect(
        _url(pool), additional_headers={"authorization": f"Bearer {pool.key}"}
    ) as ws:
        await ws.send(json.dumps(CREATE))
        while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != "response.completed":
            pass
    await asyncio.sleep(0.3)  # uvicorn logs from the connection's task after the route returned
    errors = [
        r.getMessage() for r in caplog.records if r.name == "uvicorn.error" and r.levelno >= logging.ERROR
    ]
    assert errors == []
