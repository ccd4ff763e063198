"""``GET /v1/responses`` upgraded to a WebSocket: Codex's Responses-over-WebSocket (PROTOCOLS §1.6).

The route reads the client's frames and writes the answers; what a turn does — scheduling, the
upstream session, relaying, records — is the pipeline's (:mod:`sublane_gateway.pipeline._socket_turn`).
One turn runs at a time (OPS-4): a frame that arrives while a turn runs is refused with an error
frame, except the acknowledgements clients send mid-turn. A bad key is refused before the upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from sublane_core import SubLaneError
from sublane_gateway._proxy import client_address
from sublane_gateway.pipeline import ClientRuntime, Principal, client_runtime
from sublane_gateway.pipeline._socket_turn import ClientGone, SocketTurns, TurnError, frame_type
from sublane_gateway.routes._bodies import parse_json_object
from sublane_gateway.routes._http import headers_by_name
from sublane_gateway.routes._websocket_denials import mark_denied
from sublane_protocols.responses import openai_error_body

router = APIRouter(tags=["client: OpenAI Responses"])


class ClientSocket:
    """One client WebSocket: its frames in, one turn at a time, the answers out."""

    def __init__(self, runtime: ClientRuntime, websocket: WebSocket, principal: Principal) -> None:
        self.websocket = websocket
        self.turn_running = False
        self.turns = SocketTurns(runtime, principal, headers_by_name(websocket), self._send_text, self._free)

    async def _send_text(self, text: str) -> None:
        try:
            await self.websocket.send_text(text)
        except WebSocketDisconnect:
            raise ClientGone from None

    def _free(self) -> None:
        self.turn_running = False

    async def _turn(self, text: str) -> None:
        """Decode one frame; a ``response.create`` is a turn for the pipeline."""
        try:
            frame = parse_json_object(text)  # OPS-1: too deep or lone surrogates get an error frame
        except SubLaneError as error:
            message = "The frame is not valid JSON." if error.code == "invalid_json" else error.message
            await self.turns.send_error(TurnError(400, error.code, message), None)
            return
        kind = frame.get("type")
        if kind == "response.processed":
            return
        if kind != "response.create":
            await self.turns.send_error(
                TurnError(400, "invalid_request", "Expected a 'response.create' frame."), None
            )
            return
        await self.turns.turn({key: value for key, value in frame.items() if key != "type"})

    # -- the frame loop -------------------------------------------------------------------------

    async def serve(self) -> None:
        inbox: asyncio.Queue[str | None] = asyncio.Queue()
        reader = asyncio.create_task(self._read(inbox))
        try:
            while True:
                text = await inbox.get()
                if text is None:
                    return
                turn = asyncio.create_task(self._turn(text))
                self.turn_running = True
                waiter = asyncio.create_task(reader_done(reader))
                done, _ = await asyncio.wait({turn, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if turn not in done:  # the client went away mid-turn
                    turn.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await turn
                    return
                # A frame accepted while the turn was finishing (WAIT-7) is the next turn: keep the flag.
                self.turn_running = not inbox.empty()
                turn.result()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            await self.turns.close()

    async def _read(self, inbox: asyncio.Queue[str | None]) -> None:
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    await self.turns.send_error(
                        TurnError(400, "invalid_request", "Send JSON text frames."), None, ends_turn=False
                    )
                    continue
                if self.turn_running:
                    if frame_type(text) in ("response.processed", "response.append"):
                        continue  # acknowledgements; nothing to do
                    await self.turns.send_error(
                        TurnError(409, "turn_in_progress", "A response is still running on this socket."),
                        None,
                        ends_turn=False,
                    )
                    continue
                # OPS-4: one turn at a time. The flag is set here, as the frame is accepted, so frames
                # sent back to back are refused instead of queueing behind the running turn.
                self.turn_running = True
                await inbox.put(text)
        except WebSocketDisconnect:
            pass
        finally:
            await inbox.put(None)


async def reader_done(reader: asyncio.Task[None]) -> None:
    """Wait until the client reader ends (the client went away)."""
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await asyncio.shield(reader)


@router.websocket("/v1/responses")
async def responses_websocket(websocket: WebSocket) -> None:
    """Responses over WebSocket. A bad key is refused before the upgrade with HTTP 401."""
    runtime = client_runtime(websocket)
    try:
        principal = await runtime.keys.authenticate(websocket.headers, address=client_address(websocket))
    except SubLaneError as error:
        body = openai_error_body(error.status, error.code, error.message)
        try:
            await websocket.send_denial_response(JSONResponse(body, status_code=error.status))
            mark_denied()
        except RuntimeError:
            await websocket.close(code=1008, reason=error.code)
        return
    await websocket.accept()
    try:
        await ClientSocket(runtime, websocket, principal).serve()
    finally:
        with contextlib.suppress(Exception):
            await websocket.close()
