"""Codex Responses over WebSocket: `GET /backend-api/codex/responses` upgraded (PROTOCOLS.md 1.6)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from ._accounts import Account
from ._codex_errors import auth_error, codex_error, rate_limit_headers, rate_limit_snapshot
from ._codex_events import build_codex_plan, codex_ws_encoder
from ._codex_rules import codex_cache_key, validate_codex_body
from ._content import estimate_tokens
from ._http import bearer_token, header_dict, peer_of, sim_of
from ._records import RequestRecord
from ._script import Behaviour
from ._stream import Event, Outcome, play
from ._turns import Turn, Usage

if TYPE_CHECKING:
    from ._simulator import Simulator

__all__ = ["codex_websocket"]

_AGE_LIMIT_MESSAGE = (
    "Responses websocket connection limit reached (60 minutes). "
    "Create a new websocket connection to continue."
)


class _Closed(Exception):
    """The client closed the socket."""


class _WsSink:
    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket
        self._encode = codex_ws_encoder()
        self.events = 0

    async def send(self, events: Sequence[Event]) -> None:
        for event in events:
            self.events += 1
            await self._websocket.send_text(self._encode(event))


class _Connection:
    """State of one socket: its account, upgrade headers and the responses it produced."""

    def __init__(
        self, websocket: WebSocket, sim: Simulator, account: Account, headers: dict[str, str]
    ) -> None:
        self.websocket = websocket
        self.sim = sim
        self.account = account
        self.headers = headers
        self.connected_at = sim.clock.now()
        self.response_ids: set[str] = set()
        self.last_request: dict[str, Any] | None = None
        self.last_response_id: str | None = None
        self.inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.gone = asyncio.Event()

    async def read_forever(self) -> None:
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None and message.get("bytes") is not None:
                    text = message["bytes"].decode("utf-8", "replace")
                if text is not None:
                    self.inbox.put_nowait(text)
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            self.gone.set()
            self.inbox.put_nowait(None)

    async def send_json(self, data: dict[str, Any]) -> None:
        await self.websocket.send_text(json.dumps(data, separators=(",", ":")))

    async def send_error(
        self, status: int, error: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        frame: dict[str, Any] = {"type": "error", "status": status, "error": error}
        if headers:
            frame["headers"] = headers
        await self.send_json(frame)


async def codex_websocket(websocket: WebSocket) -> None:
    sim = sim_of(websocket)
    headers = header_dict(websocket)
    record = sim.record(
        provider="codex",
        endpoint="codex.ws.connect",
        method="GET",
        path=websocket.url.path,
        query=websocket.url.query,
        headers=headers,
        raw_body=b"",
        transport="ws",
        peer=peer_of(websocket),
    )
    account, kind, problem = sim.authenticate(record, bearer_token(websocket), "codex")
    denial: tuple[int, dict[str, Any]] | None = None
    if account is None or problem is not None:
        denial = auth_error(problem or "unknown")
    elif (
        kind == "access"
        and account.require_account_id
        and headers.get("chatgpt-account-id") != account.account_id
    ):
        denial = (403, {"detail": "ChatGPT-Account-Id is missing or does not match the token"})
    elif "responses_websockets=" not in headers.get("openai-beta", ""):
        denial = (400, {"detail": "OpenAI-Beta header must include responses_websockets=<version>"})
    if denial is not None or account is None:
        status, body = denial or (401, {})
        record.status = status
        record.outcome = "rejected"
        await websocket.send_denial_response(JSONResponse(body, status_code=status))
        return
    with sim.lock:
        upgrade_headers = rate_limit_headers(account, sim.clock.now())
    upgrade_headers.update(
        {
            "x-codex-turn-state": headers.get("x-codex-turn-state") or f"ts_sim_ws_{record.seq:08d}",
            "x-models-etag": 'W/"sim-models"',
            "x-reasoning-included": "true",
        }
    )
    await websocket.accept(headers=[(k.encode(), v.encode()) for k, v in upgrade_headers.items()])
    record.status = 101
    record.outcome = "completed"
    connection = _Connection(websocket, sim, account, headers)
    reader = asyncio.ensure_future(connection.read_forever())
    try:
        await _serve(connection)
    except (WebSocketDisconnect, _Closed):
        pass
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


async def _serve(connection: _Connection) -> None:
    while True:
        text = await connection.inbox.get()
        if text is None:
            return
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            await connection.send_error(400, _invalid("Message must be a JSON object"))
            continue
        kind = message.get("type")
        if kind == "response.processed":
            _log_message(connection, message, "codex.ws.processed").outcome = "completed"
            continue
        if kind == "response.append":
            if connection.last_request is None or connection.last_response_id is None:
                await connection.send_error(400, _invalid("response.append needs an earlier response"))
                continue
            merged = dict(connection.last_request)
            merged["input"] = message.get("input") or []
            merged["previous_response_id"] = connection.last_response_id
            message = merged
        elif kind != "response.create":
            await connection.send_error(400, _invalid(f"Unsupported message type: {kind!r}"))
            continue
        if connection.sim.clock.now() - connection.connected_at >= connection.sim.ws_max_age_s:
            error = _invalid(_AGE_LIMIT_MESSAGE, code="websocket_connection_limit_reached")
            await connection.send_error(400, error)
            await connection.websocket.close(code=1000)
            return
        keep_open = await _turn(connection, message)
        if not keep_open:
            return


def _invalid(message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"type": "invalid_request_error", "code": code, "message": message, "param": param}


def _log_message(connection: _Connection, message: dict[str, Any], endpoint: str) -> RequestRecord:
    sim = connection.sim
    raw = json.dumps(message).encode()
    record = sim.record(
        provider="codex",
        endpoint=endpoint,
        method="WS",
        path=connection.websocket.url.path,
        query="",
        headers=connection.headers,
        raw_body=raw,
        transport="ws",
        body=message,
        peer=peer_of(connection.websocket),
    )
    sim.attribute(record, connection.account, bearer_token(connection.websocket), "access")
    return record


async def _turn(connection: _Connection, message: dict[str, Any]) -> bool:
    """Answer one `response.create`; returns whether the socket stays open."""
    sim = connection.sim
    account = connection.account
    generate = message.get("generate") is not False
    record = _log_message(connection, message, "codex.ws.turn" if generate else "codex.ws.prewarm")
    body = {k: v for k, v in message.items() if k not in ("type", "generate")}
    problem = validate_codex_body(body, account, websocket=True)
    previous = body.get("previous_response_id")
    if problem is None and previous is not None and previous not in connection.response_ids:
        record.status, record.outcome = 400, "rejected"
        error = _invalid(
            f"Previous response with id '{previous}' not found.",
            "previous_response_not_found",
            "previous_response_id",
        )
        await connection.send_error(400, error)
        return True
    if problem is not None:
        record.status, record.outcome = 400, "rejected"
        await connection.send_error(400, _invalid(problem))
        return True
    raw_size = estimate_tokens(json.dumps(body).encode())
    response_id = f"resp_sim_{record.seq:08d}"
    record.response_id = response_id
    if not generate:
        turn = Turn(
            record=record,
            account=account,
            counters=sim.counters_of(account.id),
            behaviour=Behaviour(),
            model=body["model"],
            rng=random.Random(f"{sim.seed}:{record.seq}"),  # noqa: S311
            lock=sim.lock,
            usage=Usage(prompt_tokens=raw_size, cached_tokens=0, output_tokens=0, reasoning_tokens=0),
        )
        record.model = body["model"]
        plan = build_codex_plan(turn, body, response_id, int(sim.clock.now()), generate=False)
        sink = _WsSink(connection.websocket)
        await sink.send([plan.events[0], plan.events[-1]])
        connection.response_ids.add(response_id)
        record.status, record.outcome = 200, "completed"
        return True
    turn = sim.begin_turn(
        record,
        account,
        body["model"],
        prompt_tokens=raw_size,
        cache_key=codex_cache_key(body, connection.headers),
    )
    behaviour = turn.behaviour
    if behaviour.kind == "error":
        return await _error_frame(connection, turn)
    with sim.lock:
        snapshot = rate_limit_snapshot(account, sim.clock.now())
    plan = build_codex_plan(turn, body, response_id, int(sim.clock.now()))
    sink = _WsSink(connection.websocket)

    def settle(outcome: Outcome) -> None:
        if outcome in ("completed", "incomplete"):
            connection.response_ids.add(response_id)
        turn.finish(outcome, 200)

    async def run() -> Outcome:
        if behaviour.header_delay_ms > 0:
            await asyncio.sleep(behaviour.header_delay_ms / 1000)
        await connection.send_json(snapshot)
        outcome = await play(plan.events, behaviour, sink, plan.failure, plan.success, settle)
        if outcome == "cut":
            await connection.websocket.close(code=1011, reason="upstream stream interrupted")
        return outcome

    outcome = await _race_disconnect(connection, run())
    record.events = sink.events
    turn.finish(outcome, 200)
    if outcome in ("completed", "incomplete"):
        connection.response_ids.add(response_id)
        connection.last_request = body
        connection.last_response_id = response_id
    return outcome not in ("cut", "canceled")


async def _race_disconnect(connection: _Connection, work: Any) -> Outcome:
    task: asyncio.Future[Outcome] = asyncio.ensure_future(work)
    gone: asyncio.Future[bool] = asyncio.ensure_future(connection.gone.wait())
    try:
        waiters: list[asyncio.Future[Any]] = [task, gone]
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if task in done:
        try:
            return task.result()
        except (WebSocketDisconnect, OSError, RuntimeError):
            return "canceled"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return "canceled"


async def _error_frame(connection: _Connection, turn: Turn) -> bool:
    sim = connection.sim
    with sim.lock:
        status, body, extra = codex_error(turn.behaviour, turn.account, sim.clock.now(), turn.quota_window)
        headers = rate_limit_headers(turn.account, sim.clock.now())
    headers.update(extra)
    if isinstance(body, str):
        error: dict[str, Any] = {"type": "server_error", "message": f"Upstream returned HTTP {status}"}
    elif "error" in body:
        error = dict(body["error"])
        if error.get("type") == "usage_limit_reached":
            headers[f"x-codex-{turn.quota_window or 'primary'}-used-percent"] = "100"
    else:
        error = _invalid(str(body.get("detail")))

    async def run() -> Outcome:
        if turn.behaviour.header_delay_ms > 0:
            await asyncio.sleep(turn.behaviour.header_delay_ms / 1000)
        turn.finish("error", status)
        await connection.send_error(status, error, headers)
        return "error"

    outcome = await _race_disconnect(connection, run())
    turn.finish(outcome, status)
    return outcome != "canceled"
