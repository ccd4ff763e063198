"""The model transport against real loopback sockets: what the pipeline relies on from it.

SubLane's upstream interface over our HTTP/1.1 pool (``_http1.py``, issue #19): a streamed body
arrives chunk by chunk as the server writes it, keep-alive connections are reused, a refused
connection is ``UpstreamConnectError`` (the pipeline may try the provider's next host), a server
that goes silent is ``UpstreamTimeout``, and one that closes mid-body is ``UpstreamCut``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from sublane_core import Settings
from sublane_providers import (
    UpstreamConnectError,
    UpstreamCut,
    UpstreamError,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamTimeout,
    chunks_of,
    read_all,
)
from sublane_providers._egress import use_egress
from sublane_providers._transport import UpstreamClients
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
            response = await clients.send(_post(f"{url}/v1/thing", b'{"x":1}'))
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            chunks = chunks_of(response)
            assert await anext(chunks) == b"first\n"  # before the server wrote the rest
            release.set()
            assert b"".join([chunk async for chunk in chunks]) == b"second\n"
            await response.aclose()
    assert connections == 1


async def test_a_refused_connection_is_a_connect_error(clients: UpstreamClients) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(UpstreamConnectError):
        await clients.send(_post(f"http://127.0.0.1:{port}/v1/thing"))


async def test_a_silent_server_is_a_timeout(clients: UpstreamClients) -> None:
    answered = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        await answered.wait()  # no answer within the 1 s header timeout
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        with pytest.raises(UpstreamTimeout):
            await clients.send(_post(f"{url}/v1/thing"))
        answered.set()


async def test_a_body_cut_mid_way_is_an_http_error_not_a_timeout(clients: UpstreamClients) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
        await writer.drain()
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        response = await clients.send(_post(f"{url}/v1/thing"))
        with pytest.raises(UpstreamCut):
            async for _chunk in chunks_of(response):
                pass
        await response.aclose()


async def test_a_connection_closed_before_any_answer_is_not_a_timeout(clients: UpstreamClients) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        with pytest.raises(UpstreamError) as caught:
            await clients.send(_post(f"{url}/v1/thing"))
    assert not isinstance(caught.value, UpstreamTimeout)


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
        response = await clients.send(_post(f"{url}/v1/thing"))
        await cut.wait()
        await asyncio.sleep(0.1)  # the cut reaches the client before it reads anything
        received: list[bytes] = []
        with pytest.raises(UpstreamCut):
            await _read_into(response, received)
        await response.aclose()
    assert b"".join(received) == b"first\nsecond\n"


async def _read_into(response: UpstreamResponse, received: list[bytes]) -> None:
    async for chunk in chunks_of(response):
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
            response = await clients.send(_post("http://upstream.invalid/v1/thing"))
            assert response.status_code == 200 and await read_all(response) == b"ok"
            with pytest.raises(UpstreamConnectError):  # bypassed: resolved directly, and it does not exist
                await clients.send(_post("http://direct.invalid/v1/thing"))
        finally:
            await clients.aclose()
    assert seen == [b"POST http://upstream.invalid/v1/thing HTTP/1.1"]


async def test_a_bounded_read_gives_none_and_the_stream_goes_on(clients: UpstreamClients) -> None:
    """A bounded wait that times out gives ``None`` (a heartbeat is due) and loses nothing: the
    next read gets the bytes that came later, then ``b""`` at the end."""
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
        response = await clients.send(_post(f"{url}/v1/thing"))
        assert await response.read(1.0) == b"first\n"
        assert await response.read(0.05) is None  # nothing yet: the caller sends a heartbeat
        release.set()
        assert await response.read(1.0) == b"second\n"
        assert await response.read(1.0) == b""
        await response.aclose()


async def test_the_head_carries_host_length_and_identity_encoding_and_the_request_headers(
    clients: UpstreamClients,
) -> None:
    """What goes on the wire: the request line, Host, the request's headers as given, then
    Content-Length and ``accept-encoding: identity`` (answers are relayed byte for byte)."""
    heads: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):  # the third request is refused before it is sent
            request = await read_http_request(reader)
            heads.append(request.split(b"\r\n\r\n", 1)[0])
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            await writer.drain()
        await close_quietly(writer)

    server, url = await _serve(handler)
    port = url.rsplit(":", 1)[1]
    async with server:
        headers = {"originator": "codex_cli_rs", "authorization": "Bearer t"}
        response = await clients.send(UpstreamRequest("POST", f"{url}/v1/x?alt=sse", headers, b'{"a":1}'))
        assert await read_all(response) == b"ok"
        own = {"host": "elsewhere", "accept-encoding": "gzip"}
        response = await clients.send(UpstreamRequest("POST", f"{url}/v1/y", own, b"{}"))
        assert await read_all(response) == b"ok"
        with pytest.raises(ValueError, match="line break"):
            await clients.send(UpstreamRequest("POST", f"{url}/v1/x", {"x-a": "1\r\nx-b: 2"}, b"{}"))
    assert heads == [
        b"POST /v1/x?alt=sse HTTP/1.1\r\nhost: 127.0.0.1:" + port.encode() + b"\r\noriginator: codex_cli_rs"
        b"\r\nauthorization: Bearer t\r\ncontent-length: 7\r\naccept-encoding: identity",
        b"POST /v1/y HTTP/1.1\r\nhost: elsewhere\r\naccept-encoding: gzip\r\ncontent-length: 2",
    ]


async def test_a_header_value_that_is_a_bare_line_end_never_ends_the_head_early(
    clients: UpstreamClients,
) -> None:
    """Issue #49 counts the head's lines in C; a value of CRLF alone (a blank line: the head's end,
    and the rest smuggled as a body) is refused like any other line break, before a byte is sent."""
    reached: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(await reader.read(65536))
        await close_quietly(writer)

    server, url = await _serve(handler)
    async with server:
        for name, value in (("x-a", "\r\n"), ("\r\n", "1"), ("x-a", "\r\n\r\nGET /x HTTP/1.1")):
            with pytest.raises(ValueError, match="line break"):
                await clients.send(UpstreamRequest("POST", f"{url}/v1/x", {name: value}, b"{}"))
    assert reached == []


def _post(url: str, content: bytes = b"{}") -> UpstreamRequest:
    return UpstreamRequest("POST", url, {"content-type": "application/json"}, content)


async def test_egress_1_an_accounts_egress_tunnels_even_plain_http_and_a_changed_proxy_closes_its_pool() -> (
    None
):
    """Model requests inside ``use_egress`` go through that proxy by ``CONNECT`` (so its refusal is
    never mistaken for the upstream's answer); ``close_egress`` closes the connections through it."""
    connects: list[bytes] = []
    tunnels: list[asyncio.StreamWriter] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await read_http_request(reader):
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass  # the tunnel closed
        finally:
            await close_quietly(writer)

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_http_request(reader)
        connects.append(head.split(b"\r\n", 1)[0])
        target = head.split(b" ")[1].decode()
        host, port = target.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        tunnels.append(writer)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            await close_quietly(sink)

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    upstream_server, upstream_url = await _serve(upstream)
    proxy_server, proxy_url = await _serve(proxy)
    async with upstream_server, proxy_server:
        clients = UpstreamClients(Settings(header_timeout_s=2.0))
        try:
            with use_egress(proxy_url):
                for _ in range(2):  # the second on the kept tunnel
                    response = await clients.send(_post(f"{upstream_url}/v1/thing"))
                    assert await read_all(response) == b"ok"
            assert connects == [f"CONNECT {upstream_url.removeprefix('http://')} HTTP/1.1".encode()]
            await clients.close_egress(proxy_url)
            await asyncio.sleep(0.05)
            assert all(tunnel.transport.is_closing() for tunnel in tunnels)
        finally:
            await clients.aclose()


async def test_egress_2_a_proxys_407_to_a_metadata_call_is_a_proxy_error_not_the_upstreams_answer() -> None:
    import httpx

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:  # a SOCKS client's greeting is no HTTP request: it gives up, and this ends here too
            await read_http_request(reader)
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            await close_quietly(writer)

    server, url = await _serve(proxy)
    async with server:
        clients = UpstreamClients(Settings(header_timeout_s=2.0))
        try:
            with use_egress(url), pytest.raises(httpx.ProxyError):
                await clients.metadata.get("http://upstream.invalid/usage")
            with use_egress(url.replace("http://", "socks5://")), pytest.raises(httpx.ProxyError):
                await clients.metadata.get("http://upstream.invalid/usage")  # not a SOCKS server
        finally:
            await clients.aclose()


async def test_egress_1_an_https_proxy_carries_https_calls_tls_inside_tls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An ``https://`` egress: TLS to the proxy, then the upstream's own TLS through the tunnel —
    for model calls (the pool) and metadata calls (httpx) alike, under the loop the gateway runs."""
    import ssl

    import trustme

    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1")
    bundle = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))  # the clients' default context trusts the test CA
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certificate.configure_cert(served)
    connects: list[bytes] = []
    writers: list[asyncio.StreamWriter] = []  # every stream the two servers open, closed at the end

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            await read_http_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        sink.close()

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            head = await reader.readuntil(b"\r\n\r\n")
            connects.append(head.split(b"\r\n", 1)[0])
            host, port = head.split(b" ")[1].decode().rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writers.append(up_writer)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    upstream_server = await asyncio.start_server(upstream, "127.0.0.1", 0, ssl=served)
    proxy_server = await asyncio.start_server(proxy, "127.0.0.1", 0, ssl=served)
    upstream_port = upstream_server.sockets[0].getsockname()[1]
    proxy_port = proxy_server.sockets[0].getsockname()[1]
    async with upstream_server, proxy_server:
        clients = UpstreamClients(Settings(header_timeout_s=3.0))
        try:
            with use_egress(f"https://127.0.0.1:{proxy_port}"):
                response = await clients.send(_post(f"https://127.0.0.1:{upstream_port}/v1/thing"))
                assert response.status_code == 200 and await read_all(response) == b"ok"
                answer = await clients.metadata.get(f"https://127.0.0.1:{upstream_port}/usage")
                assert answer.status_code == 200 and answer.text == "ok"
        finally:
            await clients.aclose()
            for writer in writers:
                await close_quietly(writer)
    assert connects == [f"CONNECT 127.0.0.1:{upstream_port} HTTP/1.1".encode()] * 2


async def test_the_shared_tls_context_reads_its_ca_certificates_at_the_first_handshake_and_verifies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue #49: the upstream TLS context is made at start without the CA bundle (1.2 MB resident)
    and reads it at its first handshake — the model pool's (asyncio's TLS) and httpx's (anyio's) —
    with ``create_default_context``'s settings: a certificate of another authority is refused."""
    import ssl

    import httpx
    import trustme

    from sublane_providers._http1 import Http1Pool
    from sublane_providers._transport import CertificatesOnFirstHandshake

    trusted, stranger = trustme.CA(), trustme.CA()
    bundle = tmp_path / "ca.pem"
    trusted.cert_pem.write_to_path(str(bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    context = CertificatesOnFirstHandshake(ssl.PROTOCOL_TLS_CLIENT)
    default = ssl.create_default_context()
    assert (context.protocol, context.verify_mode, context.check_hostname, context.options) == (
        default.protocol, default.verify_mode, default.check_hostname, default.options,
    )  # fmt: skip
    assert context.cert_store_stats()["x509_ca"] == 0  # nothing read at start

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ssl.SSLError):
            await read_http_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        await close_quietly(writer)

    async def tls_server(authority: trustme.CA) -> asyncio.Server:
        served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        authority.issue_cert("127.0.0.1").configure_cert(served)
        return await asyncio.start_server(upstream, "127.0.0.1", 0, ssl=served)

    good, bad = await tls_server(trusted), await tls_server(stranger)
    good_url = f"https://127.0.0.1:{good.sockets[0].getsockname()[1]}"
    bad_url = f"https://127.0.0.1:{bad.sockets[0].getsockname()[1]}"
    pool = Http1Pool(context, limit=4, keepalive_s=1.0, connect_timeout=3.0, read_timeout=3.0)
    async with good, bad:
        try:
            response = await pool.send(_post(f"{good_url}/v1/thing"), None)
            assert response.status_code == 200 and await read_all(response) == b"ok"
            assert context.cert_store_stats()["x509_ca"] == 1  # read by the pool's handshake
            with pytest.raises(UpstreamError):
                await pool.send(_post(f"{bad_url}/v1/thing"), None)
        finally:
            await pool.aclose()
        fresh = CertificatesOnFirstHandshake(ssl.PROTOCOL_TLS_CLIENT)
        async with httpx.AsyncClient(verify=fresh) as http:
            assert (await http.get(f"{good_url}/usage")).text == "ok"  # read by httpx's handshake
            assert fresh.cert_store_stats()["x509_ca"] == 1
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.get(f"{bad_url}/usage")
