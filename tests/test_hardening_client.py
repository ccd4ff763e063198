"""OPS-1 and OPS-4 on the client API, against the simulator: no 500, no socket closed without an
error frame, every wait bounded. Each test reproduces a probe of issue #16."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import websockets
from gateway_pool import Pool, settings_for, store_catalogue
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from sublane_gateway.testing import running_gateway, serve_in_thread
from sublane_sim import Behaviour, Simulator

RESPONSES = {"model": "gpt-5-codex", "input": "hi", "stream": False}
MESSAGES = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CREATE = {
    "type": "response.create",
    "model": "gpt-5-codex",
    "input": "say hi",
    "store": False,
    "stream": True,
}
WS_HEADERS = {"openai-beta": "responses_websockets=2026-02-06"}


def _ws_url(pool: Pool) -> str:
    return pool.gateway.url.replace("http://", "ws://") + "/v1/responses"


async def _frames_until_end(ws: Any) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        frames.append(frame)
        if frame["type"] in ("response.completed", "response.incomplete", "response.failed", "error"):
            return frames


@pytest.mark.parametrize(
    "path", ["/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens"]
)
def test_ops_1_deeply_nested_json_is_400_not_500(make_pool: Callable[..., Pool], path: str) -> None:
    # Found by probing: "[" × 50000 gave a 500 (RecursionError); 300 levels parse but are refused too.
    pool = make_pool()
    client = pool.client()
    for body in ("[" * 50_000, '{"model": "gpt-5-codex", "input": ' + "[" * 300 + "]" * 300 + "}"):
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        assert 400 <= response.status_code < 500, (path, response.status_code, response.text[:200])
    assert pool.runtime.leases.total_in_flight() == 0


def test_ops_1_a_lone_surrogate_in_messages_content_is_400_not_500(make_pool: Callable[..., Pool]) -> None:
    # Found by probing: /v1/messages with "\ud800" in content gave a 500 in the Claude adapter.
    pool = make_pool(provider="claude")
    raw = json.dumps(MESSAGES).replace('"hi"', '"hi \\ud800"')
    response = pool.client().post("/v1/messages", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert "surrogate" in response.json()["error"]["message"]
    fine = pool.client().post(
        "/v1/messages", json={**MESSAGES, "messages": [{"role": "user", "content": "hi \U0001f600"}]}
    )
    assert fine.status_code == 200


def test_ops_1_model_bodies_are_bounded_when_chunked(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(max_body_mb=1)

    def chunks() -> Any:
        yield b'{"model": "gpt-5-codex", "input": "'
        for _ in range(20):
            yield b"x" * 65_536
        yield b'"}'

    response = pool.client().post(
        "/v1/responses", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


async def test_ops_1_a_deeply_nested_websocket_frame_gets_an_error_frame(
    make_pool: Callable[..., Pool],
) -> None:
    # Found by probing: the socket closed with no error frame (RecursionError in the turn).
    pool = make_pool()
    headers = {"authorization": f"Bearer {pool.key}", **WS_HEADERS}
    async with websockets.connect(_ws_url(pool), additional_headers=headers, max_size=None) as ws:
        await ws.send("[" * 50_000)
        [frame] = await _frames_until_end(ws)
        assert frame["type"] == "error" and frame["error"]["code"] == "invalid_json"
        await ws.send(json.dumps(CREATE).replace('"say hi"', '"say \\ud800"'))
        [frame] = await _frames_until_end(ws)
        assert frame["type"] == "error" and frame["error"]["code"] == "invalid_request"
        turn = await _next_turn(ws)
        assert turn[-1]["type"] == "response.completed"  # the socket still serves turns


async def test_ops_4_back_to_back_response_create_frames_get_turn_in_progress(
    make_pool: Callable[..., Pool],
) -> None:
    # Found by probing: 41 frames sent at once all queued and 40 ran, each up to 16 MiB.
    pool = make_pool()
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.ok(deltas=4, pacing_ms=50))
    headers = {"authorization": f"Bearer {pool.key}", **WS_HEADERS}
    async with websockets.connect(_ws_url(pool), additional_headers=headers) as ws:
        for _ in range(10):
            await ws.send(json.dumps(CREATE))
        frames: list[dict[str, Any]] = []
        while not any(frame["type"] == "response.completed" for frame in frames):
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
        await asyncio.sleep(0.5)  # anything queued would start now
    refused = [frame for frame in frames if frame["type"] == "error"]
    assert len(refused) == 9
    assert all(frame["error"]["code"] == "turn_in_progress" and frame["status"] == 409 for frame in refused)
    assert len(pool.finished) == 1  # one turn ran; nothing was queued behind it
    assert pool.runtime.leases.total_in_flight() == 0


async def test_ops_4_a_stalled_websocket_turn_ends_at_the_request_deadline(
    make_pool: Callable[..., Pool],
) -> None:
    # Found by probing: a stalled upstream held the turn's slot forever (ADM-9, TIME-3).
    pool = make_pool(request_timeout_s=0.6)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.stall(1, stall_ms=None))
    headers = {"authorization": f"Bearer {pool.key}", **WS_HEADERS}
    started = time.monotonic()
    async with websockets.connect(_ws_url(pool), additional_headers=headers) as ws:
        await ws.send(json.dumps(CREATE))
        frames = await _frames_until_end(ws)
        assert time.monotonic() - started < 4
        assert frames[-1]["type"] == "error" and frames[-1]["error"]["code"] == "request_timeout"
        assert pool.runtime.leases.total_in_flight() == 0
        turn = await _next_turn(ws)
        assert turn[-1]["type"] == "response.completed"  # a fresh upstream socket serves the next turn
    assert [record.error_code for record in pool.finished][:1] == ["request_timeout"]


async def test_ops_4_websocket_turns_honour_the_idle_timeout(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(stream_idle_timeout_s=0.4)
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.stall(1, stall_ms=5000))
    headers = {"authorization": f"Bearer {pool.key}", **WS_HEADERS}
    started = time.monotonic()
    async with websockets.connect(_ws_url(pool), additional_headers=headers) as ws:
        await ws.send(json.dumps(CREATE))
        frames = await _frames_until_end(ws)
    assert time.monotonic() - started < 3
    assert frames[-1]["error"]["code"] == "stream_idle_timeout"
    assert pool.finished[-1].outcome == "error" and pool.finished[-1].error_code == "stream_idle_timeout"
    assert pool.runtime.leases.total_in_flight() == 0


async def _next_turn(ws: Any) -> list[dict[str, Any]]:
    await ws.send(json.dumps(CREATE))
    return await _frames_until_end(ws)


_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
_JSON = st.one_of(
    _LEAF,
    st.lists(_LEAF, max_size=4),
    st.dictionaries(st.text(max_size=8), _LEAF | st.lists(_LEAF, max_size=3), max_size=4),
)
_FIELDS = st.sampled_from(["model", "input", "messages", "stream", "max_tokens", "tools", "metadata", "n"])


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    """Client bodies: plausible, wrong types, deep, with surrogates, NaN and huge numbers."""
    kind = draw(st.sampled_from(["object", "deep", "surrogate", "huge_int", "raw"]))
    if kind == "deep":
        depth = draw(st.integers(min_value=100, max_value=5000))
        return ('{"model": "gpt-5-codex", "input": ' + "[" * depth + "]" * depth + "}").encode()
    if kind == "surrogate":
        return (
            b'{"model": "gpt-5-codex\\ud83d", "input": "x\\udfff",'
            b' "messages": [{"role": "user", "content": "\\ud800"}]}'
        )
    if kind == "huge_int":
        return b'{"model": "gpt-5-codex", "input": "hi", "max_output_tokens": 1' + b"0" * 400 + b"}"
    if kind == "raw":
        return draw(st.binary(max_size=64))
    body = draw(st.dictionaries(_FIELDS, _JSON, max_size=5))
    if draw(st.booleans()):
        body["model"] = draw(st.sampled_from(["gpt-5-codex", "claude-sonnet-4-6", "", "codex/", "x" * 300]))
    return json.dumps(body, allow_nan=True).encode()


def test_ops_1_fuzzed_client_bodies_never_get_a_5xx(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    client = pool.client()
    failures: list[str] = []

    @given(body=_bodies(), path=st.sampled_from(["/v1/responses", "/v1/chat/completions", "/v1/messages"]))
    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def fuzz(body: bytes, path: str) -> None:
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        if response.status_code >= 500 and response.status_code not in (502, 503, 504):
            failures.append(f"{path} {body[:80]!r} → {response.status_code} {response.text[:120]}")

    fuzz()
    assert not failures, "\n".join(failures[:10])
    assert pool.runtime.leases.total_in_flight() == 0


async def test_cool_2_mcool_1_a_refused_websocket_handshake_cools_the_model_not_the_account(
    sim: Simulator, tmp_path: Path
) -> None:
    # Found by probing: a 5xx on the Codex WebSocket handshake was counted with an empty model, so
    # three of them cooled the whole account (and the row was dropped as "legacy" on restart).

    async def refuse(websocket: WebSocket) -> None:
        await websocket.send_denial_response(JSONResponse({"detail": "overloaded"}, status_code=503))

    upstream = Starlette(routes=[WebSocketRoute("/backend-api/codex/responses", refuse)])
    account = sim.create_account("codex")
    with serve_in_thread(upstream) as refusing:
        settings = settings_for(sim, tmp_path / "data", codex_base_url=f"{refusing}/backend-api")
        with running_gateway(settings) as gateway:
            admin = gateway.admin()
            body = {"provider": "codex", "name": "c", "credentials": account.credentials, "group_ids": [1]}
            account_id = admin.post("/api/accounts/import", json=body).json()["id"]
            store_catalogue(gateway, [account_id], [CREATE["model"]])  # this upstream has no model list
            key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
            url = gateway.url.replace("http://", "ws://") + "/v1/responses"
            headers = {"authorization": f"Bearer {key}", **WS_HEADERS}
            async with websockets.connect(url, additional_headers=headers) as ws:
                for _ in range(3):
                    await ws.send(json.dumps(CREATE))
                    [frame] = await _frames_until_end(ws)
                    assert frame["type"] == "error" and frame["status"] == 502
            runtime = admin.get("/api/accounts/runtime").json()["accounts"]
            [row] = [item for item in runtime if item["id"] == account_id]
            assert row["state"] == "model_limited" and row["cooldown_until"] is None
            assert [item["model"] for item in row["limited_models"]] == ["gpt-5-codex"]
