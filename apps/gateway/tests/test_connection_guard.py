"""The connection guard around uvicorn's HTTP protocol: OPS-4's header deadline, and a response's
head leaving with its first body bytes in one write (issue #19), never held longer than one turn of
the event loop. The guard holds uvicorn's protocol; it never subclasses it."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import uvicorn

from sublane_gateway._connection_guard import ConnectionWrites, GuardedHttp, guarded_http
from sublane_gateway.testing import serve_in_thread

GET = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


class _Transport(asyncio.Transport):
    """Records what reaches the socket, one entry per system call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[bytes] = []
        self.closed = False
        self.protocol: Any = None

    def write(self, data: Any) -> None:
        self.calls.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.calls.append(b"".join(list_of_data))

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


def _guard(
    app: Any, header_timeout_s: float = 10.0, body_timeout_s: float = 30.0, **options: Any
) -> tuple[GuardedHttp, _Transport]:
    config = uvicorn.Config(
        app, lifespan="off", log_config=None, server_header=False, date_header=False, **options
    )
    config.load()
    protocol = guarded_http(header_timeout_s, body_timeout_s)(
        config=config, server_state=uvicorn.Server(config).server_state, app_state={}
    )
    raw = _Transport()
    protocol.connection_made(raw)
    return protocol, raw


async def _turns(count: int = 20) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def _json_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})


async def test_the_head_and_the_body_written_in_one_turn_are_one_write() -> None:
    raw = _Transport()
    writes = ConnectionWrites(raw, asyncio.get_running_loop())
    writes.hold_next()
    writes.write(b"HTTP/1.1 200 OK\r\n\r\n")
    writes.write(b"{}")
    writes.write(b"more")
    await asyncio.sleep(0)
    assert raw.calls == [b"HTTP/1.1 200 OK\r\n\r\n{}", b"more"]


async def test_a_head_alone_leaves_at_the_next_turn_of_the_loop() -> None:
    raw = _Transport()
    writes = ConnectionWrites(raw, asyncio.get_running_loop())
    writes.hold_next()
    writes.write(b"HTTP/1.1 200 OK\r\n\r\n")  # a stream whose first chunk is not there yet
    assert raw.calls == []
    await asyncio.sleep(0)
    assert raw.calls == [b"HTTP/1.1 200 OK\r\n\r\n"]
    writes.write(b"data: 1\n\n")
    assert raw.calls[-1] == b"data: 1\n\n"


async def test_closing_writes_what_is_held_first_and_the_rest_passes_through() -> None:
    raw = _Transport()
    writes = ConnectionWrites(raw, asyncio.get_running_loop())
    writes.hold_next()
    writes.write(b"HTTP/1.1 500 Internal Server Error\r\n\r\n")
    writes.close()
    assert raw.calls == [b"HTTP/1.1 500 Internal Server Error\r\n\r\n"] and raw.closed
    assert writes.get_extra_info("compression") == "extra compression"
    await asyncio.sleep(0)
    assert len(raw.calls) == 1  # not written twice


async def test_the_gateway_protocol_writes_a_json_answer_in_one_call() -> None:
    """Uvicorn's protocol as the gateway runs it, fed a request: one write carries the answer."""
    protocol, raw = _guard(_json_app)
    protocol.data_received(GET)
    await _turns()
    assert raw.calls == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    protocol.connection_lost(None)
    assert not protocol.watching_headers


async def test_ops_4_a_request_head_not_complete_in_time_closes_the_connection() -> None:
    protocol, raw = _guard(_json_app, header_timeout_s=0.05)
    protocol.data_received(b"GET / HTTP/1.1\r\nHo")
    await asyncio.sleep(0.15)
    assert raw.closed and raw.calls == []


async def test_ops_4_the_header_time_of_a_kept_connection_counts_from_its_next_request() -> None:
    protocol, raw = _guard(_json_app, header_timeout_s=0.05)
    protocol.data_received(GET)  # answered at once
    await asyncio.sleep(0.1)  # idle, longer than the header time: keep-alive's business, not ours
    assert not raw.closed
    protocol.data_received(b"GET / HTTP/1.1\r\n")  # the next request begins, and stalls
    await asyncio.sleep(0.03)
    assert not raw.closed
    await asyncio.sleep(0.1)
    assert raw.closed
    protocol.connection_lost(None)


async def test_ops_4_a_pipelined_head_behind_a_running_answer_does_not_cut_that_answer() -> None:
    async def slow_stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(8):
            await asyncio.sleep(0.02)
            await send({"type": "http.response.body", "body": b"chunk", "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    protocol, raw = _guard(slow_stream, header_timeout_s=0.05)
    protocol.data_received(GET + b"GET / HTT")  # a second head starts while the first streams
    await asyncio.sleep(0.12)
    assert not raw.closed  # still answering the first request
    await asyncio.sleep(0.3)
    assert b"".join(raw.calls).count(b"5\r\nchunk\r\n") == 8
    assert raw.closed  # the stalled head lost its socket once nothing else kept it
    protocol.connection_lost(None)


async def _reading_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    while (await receive()).get("more_body"):
        pass
    await _json_app(scope, receive, send)


async def test_ops_4_body_timeout_a_body_short_of_its_length_gets_408_and_the_socket_closes() -> None:
    protocol, raw = _guard(_reading_app, body_timeout_s=0.05)
    protocol.data_received(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{")
    await asyncio.sleep(0.15)
    assert raw.closed and len(raw.calls) == 1
    head, _, body = raw.calls[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head
    assert b'"type":"error"' in body and b'"body_timeout"' in body  # Anthropic's shape on /v1/messages
    protocol.connection_lost(None)  # the app sees the client gone; what it writes goes nowhere
    await _turns()
    assert len(raw.calls) == 1


async def test_ops_4_body_timeout_ends_with_the_body_and_a_kept_connection_stays() -> None:
    # A body time ten times the pause: a loaded machine can hold the test's wake-up for tens of ms.
    protocol, raw = _guard(_reading_app, body_timeout_s=0.25)
    for _ in range(3):  # each request's body in time: answered, and the connection kept
        protocol.data_received(b"POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{")
        await asyncio.sleep(0.025)
        protocol.data_received(b"}")
        await _turns()
    await asyncio.sleep(0.3)  # past every request's body time: nothing is pending
    assert not raw.closed and len(raw.calls) == 3
    protocol.connection_lost(None)


async def test_a_websocket_upgrade_hands_the_socket_over_and_ends_the_header_deadline() -> None:
    """After an upgrade the connection is the WebSocket protocol's: the guard's header timer must not
    stay pending (nor keep it alive in a reference cycle)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.close"})

    protocol, raw = _guard(app, ws="websockets-sansio")
    assert protocol.watching_headers
    protocol.data_received(
        b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    assert raw.protocol is not None and raw.protocol is not protocol  # handed over
    assert not protocol.watching_headers


def test_the_test_servers_run_the_gateway_protocol() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await _json_app(scope, receive, send)

    with serve_in_thread(app) as url:
        assert httpx.get(url).text == "{}"
