"""The model transport against real loopback sockets: what the pipeline relies on from it.

httpx's types over our HTTP/1.1 pool (``_http1.py``, issue #19): a streamed body arrives chunk by chunk as the
server writes it, keep-alive connections are reused, a refused connection is ``httpx.ConnectError``
(the pipeline may try the provider's next host), a server that goes silent is a timeout, and one
that closes mid-body is an ``httpx.HTTPError`` that is not a timeout.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from sublane_core import Settings
from sublane_providers import ChunkReader
from sublane_providers._transport import RequestBuilder, UpstreamClients
from sublane_providers.testing import close_quietly, read_http_request

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _serve(handler: Handler) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}"


@pytest.fixture
async def clients() -> AsyncIterator[UpstreamClients]:
    clients = UpstreamClients(Settings(header_timeout_s=1.0))
    yield clients
    await clients.aclose()


async def test_a_streamed_body_arrives_as_written_and_the_connection_is_kept(
    clients: UpstreamClients,
) -> None:
    connections = 0
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        for _ in range(2):
            request = await read_http_request(reader)
            assert b"POST /v1/thing" in request and request.endswith(b'{"x":1}')
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            writer.write(b"6\r\nfirst\n\r\n")
            await writer.drain()
            await release.wait()
            writer.write(b"7\r\nsecond\n\r\n0\r\n\r\n")
            await writer.drain()
            release.clear()
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        for _ in range(2):
            response = await clients.send(httpx.Request("POST", f"{url}/v1/thing", json={"x": 1}))
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            chunks = response.aiter_raw()
            assert await anext(chunks) == b"first\n"  # before the server wrote the rest
            release.set()
            assert b"".join([chunk async for chunk in chunks]) == b"second\n"
            await response.aclose()
    assert connections == 1


async def test_a_refused_connection_is_a_connect_error(clients: UpstreamClients) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        await clients.send(httpx.Request("POST", f"http://127.0.0.1:{port}/v1/thing", content=b"{}"))


async def test_a_silent_server_is_a_timeout(clients: UpstreamClients) -> None:
    answered = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        await answered.wait()  # no answer within the 1 s header timeout
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        with pytest.raises(httpx.TimeoutException):
            await clients.send(httpx.Request("POST", f"{url}/v1/thing", content=b"{}"))
        answered.set()


async def test_a_body_cut_mid_way_is_an_http_error_not_a_timeout(clients: UpstreamClients) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
        await writer.drain()
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        response = await clients.send(httpx.Request("POST", f"{url}/v1/thing", content=b"{}"))
        with pytest.raises(httpx.HTTPError) as caught:
            async for _chunk in response.aiter_raw():
                pass
        await response.aclose()
    assert not isinstance(caught.value, httpx.TimeoutException)


async def test_a_connection_closed_before_any_answer_is_not_a_timeout(clients: UpstreamClients) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        with pytest.raises(httpx.HTTPError) as caught:
            await clients.send(httpx.Request("POST", f"{url}/v1/thing", content=b"{}"))
    assert not isinstance(caught.value, httpx.TimeoutException)


async def test_what_arrived_before_a_cut_is_delivered_even_when_read_after_it(
    clients: UpstreamClients,
) -> None:
    """The bytes that came before a cut are handed over before the error, even when read late."""
    cut = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        writer.write(b"6\r\nfirst\n\r\n7\r\nsecond\n\r\n")
        await writer.drain()
        writer.transport.abort()
        cut.set()

    server, url = await _serve(handler)
    async with server:
        response = await clients.send(httpx.Request("POST", f"{url}/v1/thing", content=b"{}"))
        await cut.wait()
        await asyncio.sleep(0.1)  # the cut reaches the client before it reads anything
        received: list[bytes] = []
        with pytest.raises(httpx.ReadError):
            await _read_into(response, received)
        await response.aclose()
    assert b"".join(received) == b"first\nsecond\n"


async def _read_into(response: httpx.Response, received: list[bytes]) -> None:
    async for chunk in response.aiter_raw():
        received.append(chunk)


async def test_model_requests_honour_http_proxy_and_no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's proxy is read once, at start, and applies per host (NO_PROXY bypasses it)."""
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_http_request(reader)
        seen.append(request.split(b"\r\n", 1)[0])
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        await close_quietly(writer)

    server, url = await _serve(proxy)
    async with server:
        monkeypatch.setenv("HTTP_PROXY", url)
        monkeypatch.setenv("NO_PROXY", "direct.invalid")
        clients = UpstreamClients(Settings(header_timeout_s=2.0))
        try:
            response = await clients.send(
                httpx.Request("POST", "http://upstream.invalid/v1/thing", content=b"{}")
            )
            assert response.status_code == 200 and await response.aread() == b"ok"
            with pytest.raises(httpx.ConnectError):  # bypassed: resolved directly, and it does not exist
                await clients.send(httpx.Request("POST", "http://direct.invalid/v1/thing", content=b"{}"))
        finally:
            await clients.aclose()
    assert seen == [b"POST http://upstream.invalid/v1/thing HTTP/1.1"]


@pytest.mark.parametrize("pooled", [True, False], ids=["pool body", "any httpx stream"])
async def test_a_chunk_reader_waits_within_a_bound_and_the_stream_goes_on(
    clients: UpstreamClients, pooled: bool
) -> None:
    """A bounded wait that times out gives ``None`` (a heartbeat is due) and loses nothing: the
    next read gets the bytes that came later, then ``b""`` at the end — on the pool's bodies and on
    any other httpx stream."""
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
        await writer.drain()
        await release.wait()
        writer.write(b"7\r\nsecond\n\r\n0\r\n\r\n")
        await writer.drain()
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        response = await clients.send(httpx.Request("POST", f"{url}/v1/thing", content=b"{}"))
        if not pooled:  # the same bytes behind httpx's own stream type
            inner = response
            response = httpx.Response(200, stream=_Relayed(inner))
        reader = ChunkReader(response)
        assert await reader.read(1.0) == b"first\n"
        assert await reader.read(0.05) is None  # nothing yet: the caller sends a heartbeat
        release.set()
        assert await reader.read(1.0) == b"second\n"
        assert await reader.read(1.0) == b""
        reader.cancel()
        await response.aclose()


class _Relayed(httpx.AsyncByteStream):
    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


async def test_the_request_builder_builds_what_the_client_would() -> None:
    """The model path's cheaper ``build_request``: the same URL, headers in the same order,
    content and timeout as httpx's; while the client holds cookies, the client's own (with them)."""
    client = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=30.0))
    builder = RequestBuilder(client)
    headers = {"originator": "codex_cli_rs", "authorization": "Bearer t", "accept": "text/event-stream"}
    for url in ("https://chatgpt.com/backend-api/codex/responses", "http://127.0.0.1:8/v1/x?alt=sse") * 2:
        ours = builder.build("POST", url, content=b'{"a":1}', headers=headers)
        theirs = client.build_request("POST", url, content=b'{"a":1}', headers=headers)
        assert (ours.method, ours.url, ours.headers.raw, ours.content, ours.extensions) == (
            theirs.method, theirs.url, theirs.headers.raw, theirs.content, theirs.extensions
        )  # fmt: skip
    client.cookies.set("__cf_bm", "x", domain="chatgpt.com")
    with_cookie = builder.build(
        "POST", "https://chatgpt.com/backend-api/codex/responses", content=b"{}", headers={}
    )
    assert with_cookie.headers["cookie"] == "__cf_bm=x"
    await client.aclose()
