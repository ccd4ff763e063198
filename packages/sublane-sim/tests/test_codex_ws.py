"""Codex Responses over WebSocket: upgrade checks, prewarm, sequential turns, errors, age limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from sublane_sim import Behaviour, SimAccount, Simulator

BETA = "responses_websockets=2026-02-06"


def ws_url(sim: Simulator) -> str:
    return sim.codex_base_url.replace("http://", "ws://") + "/codex/responses"


def upgrade_headers(account: SimAccount, beta: str | None = BETA) -> dict[str, str]:
    headers = {"authorization": f"Bearer {account.access_token}", "chatgpt-account-id": account.account_id}
    if beta:
        headers["openai-beta"] = beta
    return headers


def create(**extra: Any) -> str:
    message: dict[str, Any] = {
        "type": "response.create",
        "model": "gpt-5-codex",
        "store": False,
        "stream": True,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "prompt_cache_key": "thread-ws",
    }
    message.update(extra)
    return json.dumps(message)


async def read_turn(ws: ClientConnection) -> list[dict[str, Any]]:
    """Frames up to and including a terminal event or an error frame."""
    frames: list[dict[str, Any]] = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
        frames.append(frame)
        if frame["type"] in ("response.completed", "response.incomplete", "response.failed", "error"):
            return frames


async def test_upgrade_requires_openai_beta(sim: Simulator) -> None:
    account = sim.create_account("codex")
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url(sim), additional_headers=upgrade_headers(account, beta=None)):
            pass
    assert refused.value.response.status_code == 400


async def test_upgrade_rejects_bad_tokens(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.expire_access_tokens(account.id)
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url(sim), additional_headers=upgrade_headers(account)):
            pass
    assert refused.value.response.status_code == 401
    assert b"token_expired" in refused.value.response.body


async def test_prewarm_then_sequential_turns_with_previous_response(sim: Simulator) -> None:
    account = sim.create_account("codex")
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        assert ws.response is not None
        assert ws.response.headers["x-codex-turn-state"]
        assert ws.response.headers["x-models-etag"]
        assert "permessage-deflate" in ws.response.headers.get("sec-websocket-extensions", "")
        await ws.send(create(generate=False))
        prewarm = await read_turn(ws)
        assert [f["type"] for f in prewarm] == ["response.created", "response.completed"]
        assert prewarm[-1]["response"]["output"] == []
        await ws.send(create(previous_response_id=prewarm[0]["response"]["id"]))
        first = await read_turn(ws)
        assert first[0]["type"] == "codex.rate_limits"
        assert first[0]["rate_limits"]["primary"]["window_minutes"] == 300
        assert first[1]["type"] == "response.created"
        assert [f["sequence_number"] for f in first[1:]] == list(range(len(first) - 1))
        assert first[-1]["type"] == "response.completed"
        await ws.send(create(previous_response_id=first[-1]["response"]["id"]))
        second = await read_turn(ws)
        assert second[-1]["type"] == "response.completed"
        assert second[-1]["response"]["usage"]["input_tokens_details"]["cached_tokens"] > 0
        await ws.send(json.dumps({"type": "response.processed", "response_id": second[-1]["response"]["id"]}))
        await ws.send(json.dumps({"type": "response.append", "input": []}))
        appended = await read_turn(ws)
        assert appended[-1]["type"] == "response.completed"
        assert appended[-1]["response"]["previous_response_id"] == second[-1]["response"]["id"]
    counters = sim.counters(account.id)
    assert counters.model_requests == 3, "the prewarm is not a model request"
    assert counters.current_streams == 0 and counters.cancellations == 0
    endpoints = [r.endpoint for r in sim.requests(account_id=account.id)]
    assert endpoints == [
        "codex.ws.connect",
        "codex.ws.prewarm",
        "codex.ws.turn",
        "codex.ws.turn",
        "codex.ws.processed",
        "codex.ws.turn",
    ]


async def test_unknown_previous_response_and_store_are_error_frames(sim: Simulator) -> None:
    account = sim.create_account("codex")
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        await ws.send(create(previous_response_id="resp_elsewhere"))
        (frame,) = await read_turn(ws)
        assert frame["type"] == "error" and frame["status"] == 400
        assert frame["error"]["code"] == "previous_response_not_found"
        await ws.send(create(store=True))
        (frame,) = await read_turn(ws)
        assert frame["error"]["message"] == "Store must be set to false"
        await ws.send(create())
        assert (await read_turn(ws))[-1]["type"] == "response.completed"


async def test_wrapped_429_frame_carries_headers(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.error(429, resets_in_s=120))
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        await ws.send(create())
        (frame,) = await read_turn(ws)
        assert frame["type"] == "error" and frame["status"] == 429
        assert frame["error"]["type"] == "usage_limit_reached"
        assert frame["error"]["resets_in_seconds"] == 120
        assert frame["headers"]["x-codex-primary-used-percent"] == "100"
        await ws.send(create())
        assert (await read_turn(ws))[-1]["type"] == "response.completed", "the socket stays usable"


async def test_in_stream_failure_on_websocket(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.overload(after_deltas=1, error_code="rate_limit_exceeded"))
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        await ws.send(create())
        frames = await read_turn(ws)
        assert frames[-1]["type"] == "response.failed"
        assert frames[-1]["response"]["error"]["code"] == "rate_limit_exceeded"
        assert "try again in" in frames[-1]["response"]["error"]["message"]


async def test_connection_age_limit(sim: Simulator) -> None:
    account = sim.create_account("codex")
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        await ws.send(create())
        await read_turn(ws)
        sim.advance_clock(3600)
        await ws.send(create())
        (frame,) = await read_turn(ws)
        assert frame["error"]["code"] == "websocket_connection_limit_reached"
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 5)


async def test_server_closes_before_completion(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.cut(after_deltas=2))
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        await ws.send(create())
        received: list[str] = []

        async def drain() -> None:
            while True:
                received.append(json.loads(await asyncio.wait_for(ws.recv(), 5))["type"])

        with pytest.raises(ConnectionClosed) as closed:
            await drain()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
        assert received.count("response.output_text.delta") == 2
        assert "response.completed" not in received
    assert sim.requests(endpoint="codex.ws.turn")[-1].outcome == "cut"


async def test_client_cancellation_is_counted(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script(account.id, Behaviour.stall(after_deltas=1))
    async with connect(ws_url(sim), additional_headers=upgrade_headers(account)) as ws:
        await ws.send(create())
        while json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] != "response.output_text.delta":
            pass
        assert sim.counters(account.id).current_streams == 1
    for _ in range(100):
        if sim.counters(account.id).cancellations:
            break
        await asyncio.sleep(0.02)
    counters = sim.counters(account.id)
    assert counters.cancellations == 1 and counters.current_streams == 0
    assert sim.requests(endpoint="codex.ws.turn")[-1].outcome == "canceled"
