"""The model-request HTTP/1.1 pool (``_http1.py``) on real loopback sockets: what a general client
would give the pipeline and the pool must not lose — TLS through a proxy tunnel, informational
answers, bodies delimited by the connection's end, malformed answers, flow control for a slow
reader, idle expiry, the busy limit — and, as a property, that no sequence of finished, cut,
abandoned and cancelled exchanges leaks a busy slot or a connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import uvloop
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sublane_providers import (
    UpstreamCut,
    UpstreamError,
    UpstreamProxyError,
    UpstreamRequest,
    UpstreamTimeout,
    chunks_of,
    read_all,
)
from sublane_providers._http1 import (
    HIGH_WATER,
    TCP_KEEPALIVE_PROBES,
    TCP_KEEPALIVE_S,
    Http1Pool,
    keep_alive_timeout,
)
from sublane_providers._transport import KEEPALIVE_S
from sublane_providers.testing import close_quietly, read_http_request, serving

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
TIMEOUT_S = 2.0


def _pool(
    tls: ssl.SSLContext | None = None,
    *,
    limit: int = 16,
    keepalive_s: float = 30.0,
    timeout_s: float = TIMEOUT_S,
) -> Http1Pool:
    return Http1Pool(
        tls or ssl.create_default_context(),
        limit=limit,
        keepalive_s=keepalive_s,
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
    )


def _post(url: str, content: bytes = b"{}") -> UpstreamRequest:
    return UpstreamRequest("POST", url, {}, content)


def _ok(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


async def _keep_answering(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
        while True:
            await read_http_request(reader)
            writer.write(_ok(b"ok"))
            await writer.drain()
    await close_quietly(writer)


def test_a_round_trip_on_uvloop() -> None:
    """``sublane serve`` runs on uvloop, whose transports are not asyncio's classes."""

    async def main() -> tuple[int, bytes]:
        pool = _pool()
        async with serving(_keep_answering) as port:
            response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
            body = await read_all(response)
            await pool.aclose()
        return response.status_code, body

    assert uvloop.run(main()) == (200, b"ok")


def _certificate(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1: the server's context and a client that trusts it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "upstream.test")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("upstream.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client


async def test_https_through_a_connect_tunnel_with_proxy_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTPS_PROXY``: a CONNECT tunnel (with the proxy's Basic credentials), TLS inside it with
    the upstream's name checked, and the tunnel kept for the next request."""
    server_tls, client_tls = _certificate(tmp_path)
    tunnels: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        tunnels.append(head)
        target_reader, target_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            await close_quietly(sink)

        try:
            await asyncio.gather(pipe(reader, target_writer), pipe(target_reader, writer))
        finally:
            target_writer.transport.abort()

    async with serving(_keep_answering, server_tls) as upstream_port, serving(proxy) as proxy_port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://member:s%40cret@127.0.0.1:{proxy_port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        pool = _pool(client_tls)
        for _ in range(2):
            response = await pool.send(_post(f"https://127.0.0.1:{upstream_port}/v1/x"))
            assert response.status_code == 200 and await read_all(response) == b"ok"
        await pool.aclose()
    assert len(tunnels) == 1
    assert tunnels[0].startswith(f"CONNECT 127.0.0.1:{upstream_port} HTTP/1.1\r\n".encode())
    assert b"proxy-authorization: Basic bWVtYmVyOnNAY3JldA==" in tunnels[0]  # member:s@cret


async def test_a_proxy_that_refuses_the_tunnel_is_a_proxy_error(monkeypatch: pytest.MonkeyPatch) -> None:
    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
        await close_quietly(writer)

    async with serving(proxy) as proxy_port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy_port}")
        pool = _pool()
        with pytest.raises(UpstreamProxyError):
            await pool.send(_post("https://upstream.invalid/v1/x"))
        await pool.aclose()


async def test_an_informational_answer_is_skipped_for_the_real_one() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n" + _ok(b"real"))
        await writer.drain()
        await close_quietly(writer)

    async with serving(handler) as port:
        pool = _pool()
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert response.status_code == 200 and await read_all(response) == b"real"
        await pool.aclose()


async def test_a_body_delimited_by_the_connection_end_is_complete_and_not_reused() -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end")
        await writer.drain()
        await close_quietly(writer)

    pool = _pool()
    async with serving(handler) as port:
        for _ in range(2):
            response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
            assert await read_all(response) == b"until the end"
    assert connections == 2


async def test_a_malformed_answer_is_a_protocol_error_not_a_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)
        await close_quietly(writer)

    async with serving(handler) as port:
        pool = _pool()
        with pytest.raises(UpstreamCut):
            await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        await pool.aclose()


async def test_a_slow_reader_pauses_the_socket_instead_of_buffering_everything() -> None:
    """Flow control: an upstream writing 16 MiB to a reader that has not started holds at most
    about HIGH_WATER in the gateway; everything still arrives, in order."""
    total = 16 << 20
    block = bytes(range(256)) * 256  # 64 KiB

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % total)
        with contextlib.suppress(ConnectionError):
            for _ in range(total // len(block)):
                writer.write(block)
                await writer.drain()
        await close_quietly(writer)

    async with serving(handler) as port:
        pool = _pool()
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        await asyncio.sleep(0.5)  # the upstream writes while nobody reads
        stream = response
        held = stream._connection._buffered  # type: ignore[attr-defined]
        assert held <= HIGH_WATER + 2 * len(block)
        received = 0
        async for chunk in chunks_of(response):
            assert chunk == block[received % len(block) :][: len(chunk)] or len(chunk) > len(block)
            received += len(chunk)
        assert received == total
        await pool.aclose()


async def test_each_bounded_read_gives_up_at_its_own_deadline_with_one_timer_for_all() -> None:
    """A relay reads once per chunk with a bound (heartbeat, idle and request timeouts): a read
    gives up (``None``) when nothing came within its bound — a short bound after a long one too —
    and the stream reads on after it; successive reads share one timer instead of one each."""
    release: asyncio.Queue[bytes] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\n")
        with contextlib.suppress(ConnectionError):
            for _ in range(3):
                writer.write(await release.get())
                await writer.drain()
        await close_quietly(writer)

    async with serving(handler) as port:
        pool = _pool()
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        stream = response
        read = stream.read
        loop = asyncio.get_running_loop()
        release.put_nowait(b"ab")
        assert await read(30.0) == b"ab"  # arms the bound timer for 30 s from now
        started = loop.time()
        assert await read(0.1) is None  # shorter than the armed one: re-armed, gives up in time
        assert 0.09 <= loop.time() - started < 2.0
        connection = stream._connection  # type: ignore[attr-defined]
        timers = []
        for chunk in (b"cd", b"ef"):
            loop.call_soon(release.put_nowait, chunk)
            assert await read(30.0) == chunk
            timers.append(connection._bound._handle)
        assert timers[0] is not None and timers[1] is timers[0]  # later deadlines: the armed timer serves
        assert await read(30.0) == b""  # the end, before any bound
        await response.aclose()
        await pool.aclose()
        assert not connection._bound.armed and not connection._read_deadline.armed  # closed with the pool


class _CountingUpstream:
    """Answers every request on every connection, counting the connections."""

    def __init__(self) -> None:
        self.connections = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await _keep_answering(reader, writer)


async def test_an_idle_connection_is_closed_after_the_keepalive() -> None:
    upstream = _CountingUpstream()
    pool = _pool(keepalive_s=0.2)
    async with serving(upstream) as port:
        for pause in (0.0, 0.05, 0.5):
            await asyncio.sleep(pause)
            response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
            await read_all(response)
        await pool.aclose()
    assert upstream.connections == 2  # reused after 50 ms, a new one after 500 ms


async def test_the_keepalive_counts_from_the_last_release_though_one_timer_serves_all() -> None:
    """A connection used again before its keep-alive ran out is not closed at the first one's end:
    its idle timer, armed once, finds it used since and waits on; it closes once idle long enough."""
    upstream = _CountingUpstream()
    pool = _pool(keepalive_s=0.3)
    async with serving(upstream) as port:
        timers = []
        for pause in (0.0, 0.2, 0.2):  # each within 0.3 s of the last release, not of the first
            await asyncio.sleep(pause)
            response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
            await read_all(response)
            connection = response._connection  # type: ignore[attr-defined]
            timers.append(connection.idle._handle)
        assert upstream.connections == 1
        assert timers[0] is not None and timers[1] is timers[0]  # the release did not make another
        await asyncio.sleep(0.5)
        assert connection.closed  # idle 0.5 s > 0.3 s since its last release
        await pool.aclose()


class _HintingUpstream(_CountingUpstream):
    """Answers every request with ``Keep-Alive: {hint}`` and never closes a connection itself."""

    def __init__(self, hint: bytes) -> None:
        super().__init__()
        self.hint = hint

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                await read_http_request(reader)
                writer.write(b"HTTP/1.1 200 OK\r\nkeep-alive: %s\r\ncontent-length: 2\r\n\r\nok" % self.hint)
                await writer.drain()
        await close_quietly(writer)


async def _calls_after(pool: Http1Pool, port: int, pauses: tuple[float, ...]) -> None:
    for pause in pauses:
        await asyncio.sleep(pause)
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert await read_all(response) == b"ok"


async def test_an_upstream_that_keeps_connections_less_is_left_a_second_before_it_closes_them() -> None:
    """``Keep-Alive: timeout=2``: reused 0.3 s after its answer, not 1.3 s after (the upstream would
    close it at 2 s, and its close could cross the request); the pool's own 30 s do not count."""
    upstream = _HintingUpstream(b"timeout=2, max=100")
    pool = _pool(keepalive_s=30.0)
    async with serving(upstream) as port:
        await _calls_after(pool, port, (0.0, 0.3))
        assert upstream.connections == 1
        await _calls_after(pool, port, (1.3,))
        assert upstream.connections == 2
        await pool.aclose()


async def test_a_connection_an_upstream_keeps_a_second_or_less_is_not_kept() -> None:
    upstream = _HintingUpstream(b"timeout=1")
    pool = _pool(keepalive_s=30.0)
    async with serving(upstream) as port:
        await _calls_after(pool, port, (0.0, 0.0, 0.0))
        assert upstream.connections == 3
        assert not [c for idle in pool._idle.values() for c in idle]
        await pool.aclose()


async def test_an_upstream_that_keeps_connections_longer_does_not_lengthen_the_pools_keepalive() -> None:
    upstream = _HintingUpstream(b"timeout=600")
    pool = _pool(keepalive_s=0.2)
    async with serving(upstream) as port:
        await _calls_after(pool, port, (0.0, 0.05, 0.5))
        await pool.aclose()
    assert upstream.connections == 2  # reused after 50 ms, a new one after 500 ms


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (b"timeout=5, max=100", 5.0),
        (b"max=100, Timeout = 7", 7.0),
        (b'timeout="9"', 9.0),
        (b"max=100", None),
        (b"timeout=soon", None),
        (b"timeout=-3", None),
        (b"timeout=2.5", None),
        (b"", None),
    ],
)
def test_the_keep_alive_headers_timeout_is_read_when_it_is_a_whole_number_of_seconds(
    value: bytes, seconds: float | None
) -> None:
    assert keep_alive_timeout(value) == seconds


def _keepalive_timer_s(local_port: int) -> float | None:
    """Seconds until the kernel's TCP keep-alive probe of the loopback socket bound to ``local_port``
    (``/proc/net/tcp``: timer kind 2 is keep-alive, its time in USER_HZ ticks); ``None``: no such timer."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == local_port:
            kind, when = fields[5].split(":")
            return int(when, 16) / os.sysconf("SC_CLK_TCK") if int(kind, 16) == 2 else None
    raise AssertionError(f"no socket on port {local_port}")


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the kernel's socket table (Linux)")
async def test_a_pooled_connection_has_the_kernel_probe_its_peer_once_idle_fifteen_seconds() -> None:
    """SO_KEEPALIVE with TCP_KEEPIDLE 15 s: a NAT keeps the pooled connection's mapping, and a peer
    gone silently is found while the connection waits in the pool (read back from the kernel)."""
    peers: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(writer.get_extra_info("peername")[1])
        await _keep_answering(reader, writer)

    pool = _pool()
    async with serving(handler) as port:
        await _calls_after(pool, port, (0.0,))
        await asyncio.sleep(0.05)  # the last ACKs in: the socket's only timer is keep-alive's
        timer = _keepalive_timer_s(peers[0])
        (kept,) = [c for idle in pool._idle.values() for c in idle]
        assert kept.transport is not None
        sock = kept.transport.get_extra_info("socket")
        interval, probes = (
            sock.getsockopt(socket.IPPROTO_TCP, option)
            for option in (socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT)
        )
        await pool.aclose()
    assert timer is not None and 13.0 < timer <= float(TCP_KEEPALIVE_S)
    # Given up after 75 s unanswered: before the pool's own 90 s would hand the connection out.
    assert (interval, probes) == (TCP_KEEPALIVE_S, TCP_KEEPALIVE_PROBES)
    assert TCP_KEEPALIVE_S * (1 + TCP_KEEPALIVE_PROBES) < KEEPALIVE_S


async def test_a_connection_the_upstream_closes_while_idle_leaves_the_pool_at_once() -> None:
    """Not at the next request to that upstream, which may never come: the pool holds no dead
    connection (nor its parser and buffers) for its keep-alive."""
    closed_by_upstream = asyncio.Event()

    async def answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(_ok(b"ok"))
        await writer.drain()
        await asyncio.sleep(0.1)  # idle in the pool by now
        await close_quietly(writer)
        closed_by_upstream.set()

    pool = _pool(keepalive_s=30.0)
    async with serving(answer_then_close) as port:
        responses = await asyncio.gather(*(pool.send(_post(f"http://127.0.0.1:{port}/x")) for _ in range(3)))
        for response in responses:
            assert await read_all(response) == b"ok"
        assert len([c for idle in pool._idle.values() for c in idle]) == 3
        await closed_by_upstream.wait()
        await asyncio.sleep(0.1)
        assert not [c for idle in pool._idle.values() for c in idle]
        await _calls_after(pool, port, (0.0,))  # and the next call opens a new one
        await pool.aclose()


async def test_a_kept_connection_still_times_out_a_silent_upstream() -> None:
    """The read-timeout timer outlives an exchange for the next one on the connection; the next
    exchange is still bounded by its own read timeout, counted from its own start."""
    answered = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await read_http_request(reader)
            writer.write(_ok(b"ok"))
            await writer.drain()
            answered += 1
            await read_http_request(reader)  # the second request is never answered
            await asyncio.sleep(5)
        await close_quietly(writer)

    pool = Http1Pool(
        ssl.create_default_context(), limit=4, keepalive_s=30.0, connect_timeout=0.3, read_timeout=0.3
    )
    async with serving(handler) as port:
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert await read_all(response) == b"ok"
        await asyncio.sleep(0.2)  # the first exchange's timer is still armed, for 0.1 s from now
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(UpstreamTimeout):
            await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert 0.28 <= loop.time() - started < 2.0  # its own 0.3 s, not the first one's remainder
        await pool.aclose()
    assert answered == 1


async def test_the_read_timeout_counts_from_the_last_bytes_even_of_an_unfinished_head() -> None:
    """A slow upstream still sending is not timed out: its head trickling in over twice the read
    timeout arrives whole; only silence for the read timeout ends an exchange."""
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-slow: " + b"a" * 6 + b"\r\n\r\nok"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        with contextlib.suppress(ConnectionError):
            for index in range(0, len(head), 8):  # a piece every 0.1 s: 0.8 s in all
                writer.write(head[index : index + 8])
                await writer.drain()
                await asyncio.sleep(0.1)
        await close_quietly(writer)

    pool = Http1Pool(
        ssl.create_default_context(), limit=4, keepalive_s=30.0, connect_timeout=0.3, read_timeout=0.3
    )
    async with serving(handler) as port:
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert response.status_code == 200 and await read_all(response) == b"ok"
        await pool.aclose()


async def test_closing_the_pool_closes_a_connection_whose_answer_is_still_being_read() -> None:
    """The gateway stopping with a stream in flight: its connection is closed too, not left to the
    garbage collector (which warns about an unclosed transport)."""
    ended = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n")
        await writer.drain()
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the pool closes the connection
        ended.set()
        await close_quietly(writer)

    pool = _pool()
    async with serving(handler) as port:
        response = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        chunks = chunks_of(response)
        assert await anext(chunks) == b"ab"
        await pool.aclose()
        await asyncio.wait_for(ended.wait(), 2)  # the upstream saw the connection end
        with pytest.raises(UpstreamCut):
            await anext(chunks)
        await response.aclose()


async def test_at_most_limit_exchanges_are_in_flight_and_the_rest_wait_in_order() -> None:
    in_flight = 0
    peak = 0
    order: list[bytes] = []
    gate = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight, peak
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                request = await read_http_request(reader)
                order.append(request.rsplit(b"\r\n\r\n", 1)[1])
                in_flight += 1
                peak = max(peak, in_flight)
                await gate.wait()
                in_flight -= 1
                writer.write(_ok(b"ok"))
                await writer.drain()
        await close_quietly(writer)

    pool = _pool(limit=2)

    async def call(number: int) -> bytes:
        request = _post(f"http://127.0.0.1:{port}/x", b"%d" % number)
        response = await pool.send(request)
        return await read_all(response)

    async with serving(handler) as port:
        calls = []
        for number in range(6):
            calls.append(asyncio.create_task(call(number)))
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        assert peak == 2 and order == [b"0", b"1"]
        gate.set()
        assert await asyncio.gather(*calls) == [b"ok"] * 6
        await pool.aclose()
    assert peak == 2 and order[2:] == [b"2", b"3", b"4", b"5"]


# -- the invariant: no busy slot and no connection leaks, whatever becomes of the exchanges ------

OUTCOMES = ("complete", "cut", "abandon", "cancel_head", "cancel_body", "silent")


async def _upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers by the outcome named in the request body."""
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
        while True:
            outcome = (await read_http_request(reader)).rsplit(b"\r\n\r\n", 1)[1].decode()
            if outcome in ("cancel_head", "silent"):
                await asyncio.sleep(0.3 if outcome == "silent" else 0.05)
                if outcome == "silent":
                    break
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nbody\r\n")
            await writer.drain()
            if outcome == "cut":
                writer.transport.abort()
                return
            await asyncio.sleep(0.01)
            writer.write(b"4\r\nmore\r\n0\r\n\r\n")
            await writer.drain()
    await close_quietly(writer)


async def _exchange(pool: Http1Pool, port: int, outcome: str) -> None:
    request = _post(f"http://127.0.0.1:{port}/x", outcome.encode())
    if outcome in ("cancel_head", "cancel_body"):
        task = asyncio.create_task(
            _exchange(pool, port, "complete" if outcome == "cancel_body" else "silent")
        )
        await asyncio.sleep(0.005 if outcome == "cancel_head" else 0.015)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, UpstreamError):
            await task
        return
    try:
        response = await pool.send(request)
    except UpstreamError:
        return
    try:
        if outcome == "abandon":
            await anext(chunks_of(response))
        else:
            await read_all(response)
    except UpstreamError:
        pass
    finally:
        await response.aclose()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=10), st.integers(1, 3))
def test_no_sequence_of_exchanges_leaks_a_slot_or_a_connection(outcomes: list[str], limit: int) -> None:
    async def main() -> None:
        pool = Http1Pool(
            ssl.create_default_context(), limit=limit, keepalive_s=30.0, connect_timeout=0.2, read_timeout=0.2
        )
        async with serving(_upstream) as port:
            await asyncio.wait_for(asyncio.gather(*(_exchange(pool, port, o) for o in outcomes)), 10)
            assert pool._busy == 0  # every slot came back
            idle = [c for connections in pool._idle.values() for c in connections]
            assert all(not c.closed and c.reusable for c in idle)  # only clean connections are kept
            assert len(idle) <= limit
            # …and the pool still works at its full limit afterwards.
            await asyncio.gather(*(_exchange(pool, port, "complete") for _ in range(limit + 1)))
            assert pool._busy == 0
            await pool.aclose()

    asyncio.run(main())


async def test_an_idle_connection_already_closing_is_not_reused() -> None:
    """A kept connection whose end the loop has not seen yet is passed over for a new one."""
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await _keep_answering(reader, writer)

    pool = _pool()
    async with serving(handler) as port:
        first = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        await read_all(first)
        (kept,) = [c for idle in pool._idle.values() for c in idle]
        assert kept.transport is not None
        kept.transport.close()  # closing, connection_lost not delivered yet
        second = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert second.status_code == 200 and await read_all(second) == b"ok"
        await pool.aclose()
    assert connections == 2


async def test_a_kept_connection_closed_unanswered_sends_the_request_once_more_on_a_new_one() -> None:
    """The upstream closed an idle connection just as the request went out (its keep-alive limit):
    no byte of an answer came, so the request is sent again on a new connection."""
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        if connections == 1:  # answers once, then hangs up on the next request unanswered
            await read_http_request(reader)
            writer.write(_ok(b"first"))
            await writer.drain()
            await read_http_request(reader)
            writer.transport.abort()
            return
        await _keep_answering(reader, writer)

    pool = _pool()
    async with serving(handler) as port:
        first = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert await read_all(first) == b"first"
        second = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        assert second.status_code == 200 and await read_all(second) == b"ok"
        await pool.aclose()
    assert connections == 2


async def test_a_new_connection_closed_unanswered_or_a_kept_one_cut_mid_answer_is_an_error() -> None:
    """Only an unanswered kept connection is tried again: a new one, or an answer that began, is not."""

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_http_request(reader)
        writer.transport.abort()

    pool = _pool()
    async with serving(hang_up) as port:
        with pytest.raises(UpstreamCut):
            await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        await pool.aclose()

    requests = 0

    async def cut_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal requests
        await read_http_request(reader)
        requests += 1
        writer.write(_ok(b"first"))
        await writer.drain()
        await read_http_request(reader)
        requests += 1
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-le")  # an answer begun, then cut
        await writer.drain()
        writer.transport.abort()

    pool = _pool()
    async with serving(cut_second) as port:
        first = await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        await read_all(first)
        with pytest.raises(UpstreamCut):
            await pool.send(_post(f"http://127.0.0.1:{port}/x"))
        await pool.aclose()
    assert requests == 2  # not sent a third time
