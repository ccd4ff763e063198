"""A response's head leaves with its first body bytes, in one write (issue #19), never held longer
than one turn of the event loop."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import uvicorn
from uvicorn.server import ServerState

from sublane_gateway._head_with_body import HeadWithBody
from sublane_gateway._slow_clients import header_bounded_protocol
from sublane_gateway.testing import serve_in_thread


class _Transport:
    """Records what reaches the socket, one entry per system call."""

    def __init__(self) -> None:
        self.calls: list[bytes] = []
        self.closed = False
        self.protocol: Any = None

    def write(self, data: bytes) -> None:
        self.calls.append(bytes(data))

    def writelines(self, parts: Any) -> None:
        self.calls.append(b"".join(parts))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name in ("sockname", "peername"):
            return ("127.0.0.1", 9)
        return f"extra {name}" if name == "compression" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def test_the_head_and_the_body_written_in_one_turn_are_one_write() -> None:
    raw = _Transport()
    transport = HeadWithBody(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"{}")
    transport.write(b"more")
    await asyncio.sleep(0)
    assert raw.calls == [b"HTTP/1.1 200 OK\r\n\r\n{}", b"more"]


async def test_a_head_alone_leaves_at_the_next_turn_of_the_loop() -> None:
    raw = _Transport()
    transport = HeadWithBody(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")  # a stream whose first chunk is not there yet
    assert raw.calls == []
    await asyncio.sleep(0)
    assert raw.calls == [b"HTTP/1.1 200 OK\r\n\r\n"]
    transport.write(b"data: 1\n\n")
    assert raw.calls[-1] == b"data: 1\n\n"


async def test_closing_writes_what_is_held_first_and_the_rest_passes_through() -> None:
    raw = _Transport()
    transport = HeadWithBody(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 500 Internal Server Error\r\n\r\n")
    transport.close()
    assert raw.calls == [b"HTTP/1.1 500 Internal Server Error\r\n\r\n"] and raw.closed
    assert transport.get_extra_info("compression") == "extra compression"
    await asyncio.sleep(0)
    assert len(raw.calls) == 1  # not written twice


async def test_the_gateway_protocol_writes_a_json_answer_in_one_call() -> None:
    """Uvicorn's protocol as the gateway runs it, fed a request: one write carries the answer."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    config = uvicorn.Config(app, lifespan="off", log_config=None, server_header=False, date_header=False)
    protocol = header_bounded_protocol(10)(config=config, server_state=ServerState(), app_state={})
    raw = _Transport()
    protocol.connection_made(raw)  # type: ignore[arg-type]
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    for _ in range(20):
        await asyncio.sleep(0)
    assert raw.calls == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    protocol.connection_lost(None)


def test_the_test_servers_run_the_gateway_protocol() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    with serve_in_thread(app) as url:
        assert httpx.get(url).text == "{}"


async def test_a_websocket_upgrade_closes_the_http_protocols_deadlines() -> None:
    """After an upgrade the connection is the WebSocket protocol's: the HTTP protocol's header and
    keep-alive timers must not stay pending (nor keep it alive in a reference cycle)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.close"})

    config = uvicorn.Config(app, lifespan="off", log_config=None, ws="websockets-sansio")
    config.load()
    protocol = header_bounded_protocol(10)(config=config, server_state=ServerState(), app_state={})
    raw = _Transport()
    protocol.connection_made(raw)  # type: ignore[arg-type]
    assert protocol._headers_due.armed
    protocol.data_received(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    assert raw.protocol is not None and raw.protocol is not protocol  # handed over
    assert not protocol._headers_due.armed and not protocol._idle_until.armed
