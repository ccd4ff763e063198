"""A lean HTTP/1.1 client for model requests: a keep-alive pool over asyncio protocols, parsed by
httptools (llhttp — the parser uvicorn already runs for our own server).

Why not a general client: a model request is one POST whose body is known in full, answered by a
stream; it needs keep-alive, TLS, a forward proxy, timeouts, flow control and an answer cut
mid-way delivered up to the cut. Measured on the bench machine (BENCHMARKS.md, "The hot path"),
aiohttp's ``ClientSession`` costs about 0.3 ms of CPU per request and httpx's ``AsyncClient``
another 0.15 ms over it; this path costs a fraction of that. It speaks SubLane's own upstream
interface (``_upstream``: :class:`UpstreamRequest` in, an :class:`UpstreamResponse` out, its
errors), never another library's types.

A kept-alive connection that the upstream closes before any byte of the answer (it went idle at
the upstream's keep-alive limit as the request left: the close was on its way) is not an answer:
the request is sent once more on a new connection, as Go's client does for a server-closed idle
connection. Any other cut is the caller's error.

Timeouts: ``connect_timeout`` bounds opening a connection (and a proxy tunnel); ``read_timeout``
bounds every wait for the upstream's next bytes, the head included.

Idle connections: one is kept ``keepalive_s`` after its last answer, or less when the upstream said
it keeps it less (``Keep-Alive: timeout=N``: until a second before). Every connection asks the
kernel for TCP keep-alive probes once idle ``TCP_KEEPALIVE_S`` (as Go's dialer does): they keep a
NAT's or firewall's mapping of a pooled connection alive, and a peer gone silently is found while
the connection waits in the pool, not by the request sent on it next.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import socket
import ssl
import urllib.parse
import urllib.request
import weakref
from collections.abc import Callable
from typing import Final, cast

import httptools

from sublane_core import MovingDeadline
from sublane_providers._egress import SocksAddress
from sublane_providers._upstream import (
    ResponseHeaders,
    UpstreamConnectError,
    UpstreamCut,
    UpstreamProxyError,
    UpstreamRequest,
    UpstreamTimeout,
)

HIGH_WATER: Final = 1 << 20  # bytes held for a slow reader before the socket is paused
LOW_WATER: Final = 1 << 18
DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_TIMED_OUT: Final = "timed out"

Origin = tuple[str, str, int]  # (scheme, IDNA host, port): where the pool connects
#: An origin, the proxy to it, and whether every connection tunnels through the proxy (an account's
#: egress, EGRESS-1) or only https ones do (the environment's proxy; http goes in absolute form).
PoolKey = tuple[str, str, int, str | None, bool]
_MAX_TARGETS = 256  # parsed request targets kept by a pool
#: A connection the upstream says it keeps N seconds idle is reused for N less this at most: its
#: close would otherwise cross the next request on the wire.
KEEP_ALIVE_MARGIN_S: Final = 1.0
#: Idle seconds before the kernel's first TCP keep-alive probe, and between probes (Go's default).
TCP_KEEPALIVE_S: Final = 15
#: Unanswered probes before the kernel gives the connection up: 15 s + 4 × 15 s = 75 s, so that a
#: peer gone silently is found before the pool's keep-alive (90 s) would hand its connection out.
TCP_KEEPALIVE_PROBES: Final = 4
_KEEPALIVE_TIMING: Final = (
    ("TCP_KEEPIDLE", TCP_KEEPALIVE_S),
    ("TCP_KEEPINTVL", TCP_KEEPALIVE_S),
    ("TCP_KEEPCNT", TCP_KEEPALIVE_PROBES),
)


def keep_alive_timeout(value: bytes) -> float | None:
    """The ``timeout`` parameter of a ``Keep-Alive`` header (``timeout=5, max=100``), in seconds;
    ``None`` when it has none or it is not a whole number of seconds."""
    for parameter in value.split(b","):
        name, _, number = parameter.partition(b"=")
        if name.strip().lower() == b"timeout":
            number = number.strip().strip(b'"')
            return float(number) if number.isdigit() else None
    return None


def probe_when_idle(transport: asyncio.BaseTransport) -> None:
    """Turn on TCP keep-alive probes for ``transport``'s socket (where the system has them)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in _KEEPALIVE_TIMING:  # where the system has them; else its own timing
            option = getattr(socket, name, None)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


class _Connection(asyncio.Protocol):
    """One upstream connection and the exchange in progress on it (httptools calls ``on_*``)."""

    def __init__(self, key: PoolKey, loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        # The connection's deadlines, each on one timer that outlives the exchanges it did not end
        # (a timer made and cancelled per call or chunk cost ~3 µs on uvloop): the pool's keep-alive
        # (``None`` while in use), the read timeout of the exchange, and a bounded wait's bound.
        self.idle = MovingDeadline(loop, self._idle_expired)
        self.on_idle_expired: Callable[[_Connection], None] | None = None  # the pool's, once
        self._read_deadline = MovingDeadline(loop, self._read_timed_out)
        self._bound = MovingDeadline(loop, self._gave_up)
        # The exchange in progress.
        self.status = 0
        self.reason = b""
        # (raw name, lower-case name, value), in order: what ``ResponseHeaders`` is made of.
        self.headers: list[tuple[bytes, bytes, bytes]] = []
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.kept_for: float | None = None  # the answer's ``Keep-Alive: timeout=`` (seconds)
        self.error: str | None = None  # why the exchange ended early (_TIMED_OUT, a cut, bad bytes)
        self.answered = False  # a byte of this exchange's answer arrived
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._paused = False
        self._informational = False
        self._waiter: asyncio.Future[bool] | None = None
        self._read_timeout: float | None = None

    # -- asyncio ---------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio subclasses

    def data_received(self, data: bytes) -> None:
        self.answered = True
        read = self._read_deadline
        if read.at is not None and self._read_timeout is not None:  # bytes, even of a head: later
            read.at = self.loop.time() + self._read_timeout
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._end("the upstream sent a malformed answer")
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.idle.at is not None and self.on_idle_expired is not None:
            self.on_idle_expired(self)  # closed by the upstream while idle: out of the pool now
        self._stop_timers()
        if not self.complete and self.error is None:
            if self.head_done and self._ends_at_close():
                self.complete = True  # a body delimited by the connection's end (RFC 9112 §6.3)
            else:
                self.error = "the upstream closed the connection"
        self._wake()

    def pause_writing(self) -> None:  # the body is written whole; the kernel buffers the rest
        pass

    def resume_writing(self) -> None:
        pass

    # -- httptools -------------------------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        lower = name.lower()
        self.headers.append((name, lower, value))
        if lower == b"keep-alive":
            self.kept_for = keep_alive_timeout(value)

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # 100 Continue and friends: the real head follows
            self._informational = True
            self.headers = []
            self.reason = b""
            self.kept_for = None
            return
        self.status = status
        self.head_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()  # read now: the parser resets after this
        self._wake()

    # -- the exchange ----------------------------------------------------------------------------

    def start(self, head: bytes, body: bytes, read_timeout: float | None) -> None:
        """Send one request and get ready for its answer."""
        self.status = 0
        self.reason = b""
        self.headers = []
        self.head_done = self.complete = self.keep_alive = self.answered = False
        self.kept_for = self.error = None
        if self._chunks:  # the last answer's body, given back unread: never part of this one
            self.take()
        self._read_timeout = read_timeout
        transport = self.transport
        if transport is None or transport.is_closing():
            self.error = "the upstream closed the connection"
            return
        try:
            transport.writelines((head, body))  # no copy of the body to put the head before it
        except (OSError, RuntimeError) as exc:  # a socket that died under us
            self.error = f"the request could not be sent: {type(exc).__name__}"

    def take(self) -> bytes:
        """Everything received and not read yet (``b""``: nothing)."""
        chunks = self._chunks
        if not chunks:
            return b""
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._buffered = 0
        if self._paused and self.transport is not None and not self.closed:
            self._paused = False
            self.transport.resume_reading()
        return data

    async def wait(self, within: float | None = None) -> bool:
        """Until something happens — bytes, the head, the end, a cut or the read timeout — (``True``)
        or ``within`` seconds pass first (``False``; the exchange goes on)."""
        waiter: asyncio.Future[bool] = self.loop.create_future()
        self._waiter = waiter
        read_timeout = self._read_timeout
        now = self.loop.time()  # read once for both deadlines
        if read_timeout is not None:  # counted from the last bytes received, or from now
            self._read_deadline.set(now + read_timeout)
        if within is None:
            self._bound.at = None
        else:
            self._bound.set(now + within)
        try:
            return await waiter
        finally:
            self._waiter = None

    def _gave_up(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(False)

    def _read_timed_out(self) -> None:
        if self._waiter is None or self._read_timeout is None or self.complete or self.error:
            return  # nobody waits (the next wait sets the deadline again) or nothing to end
        self._end(_TIMED_OUT)
        self.close()

    def _idle_expired(self) -> None:
        if self.on_idle_expired is not None:
            self.on_idle_expired(self)

    def _stop_timers(self) -> None:
        self.idle.close()
        self._read_deadline.close()
        self._bound.close()
        self.on_idle_expired = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    def _end(self, error: str) -> None:
        if not self.complete and self.error is None:
            self.error = error
        self._wake()

    def _ends_at_close(self) -> bool:
        framing = (b"content-length", b"transfer-encoding")
        return all(lower not in framing for _, lower, _ in self.headers)

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed

    def finish(self) -> None:
        """The exchange is over (read or not). Its timers stay armed for the next exchange on this
        connection — they ignore an idle connection and re-arm for the exchange in progress — so
        an exchange usually makes no timer of its own; closing the connection stops them."""
        self._bound.at = None
        self._read_deadline.at = None
        self._read_timeout = None

    def close(self) -> None:
        self.finish()
        self._stop_timers()
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()


class _Tunnel(asyncio.Protocol):
    """The proxy's answer to ``CONNECT``: its head, then the socket belongs to TLS."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.answer: asyncio.Future[bytes] = loop.create_future()
        self._received = b""

    def data_received(self, data: bytes) -> None:
        self._received += data
        if b"\r\n\r\n" in self._received and not self.answer.done():
            self.answer.set_result(self._received)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answer.done():
            self.answer.set_exception(ConnectionError("the proxy closed the connection"))


class PoolResponse:
    """An answer on one of the pool's connections (an :class:`~sublane_providers.UpstreamResponse`):
    a cut gives what came before it, then :class:`UpstreamCut`."""

    __slots__ = ("_connection", "_pool", "_released", "headers", "reason", "status_code")

    def __init__(self, connection: _Connection, pool: Http1Pool) -> None:
        self.status_code = connection.status
        self.reason = connection.reason.strip()
        self.headers = ResponseHeaders(connection.headers)
        self._connection = connection
        self._pool = pool
        self._released = False

    async def read(self, within: float | None = None) -> bytes | None:
        """The bytes received since the last read, waiting for some if none; ``b""`` at the end,
        ``None`` when nothing came within ``within`` seconds (the body can still be read on)."""
        connection = self._connection
        while True:
            data = connection.take()
            if data:
                return data
            if connection.complete:
                return b""
            if connection.error is not None:
                if connection.error == _TIMED_OUT:
                    raise UpstreamTimeout("the upstream sent nothing in time")
                raise UpstreamCut(connection.error)
            if not await connection.wait(within):
                return None

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self._pool.release(self._connection)


class Http1Pool:
    """Keep-alive connections per (scheme, host, port, proxy), at most ``limit`` busy at once.

    ``HTTPS_PROXY``/``HTTP_PROXY`` and ``NO_PROXY`` are read once, at start. Bound to the event
    loop of its first request; another loop (a second test app) starts from an empty pool.
    """

    def __init__(
        self,
        tls: ssl.SSLContext,
        *,
        limit: int,
        keepalive_s: float,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        self._tls = tls
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._limit = limit
        self._keepalive_s = keepalive_s
        self._idle: dict[PoolKey, list[_Connection]] = {}
        # Every connection of the current loop, idle or in use: closing the pool closes them all
        # (an answer still being read when the gateway stops would leave its transport open).
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._busy = 0
        self._queue: collections.deque[asyncio.Future[None]] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies = urllib.request.getproxies_environment()
        self._proxy_of_host: dict[tuple[str, str], str | None] = {}
        self._targets: dict[str, _Target] = {}

    # -- sending ---------------------------------------------------------------------------------

    async def send(self, request: UpstreamRequest, egress: str | None = None) -> PoolResponse:
        """Send ``request``; the answer's body is read from the response.

        ``egress``: the proxy an account's calls leave through (EGRESS-1: ``http``, ``https``,
        ``socks5``, ``socks5h``); every connection to it is a tunnel. ``None``: the environment's
        proxy, else direct."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._close_all()  # what is left of the loop the pool leaves
            self._loop = loop
            self._busy = 0
            self._queue.clear()
        target = self._targets.get(request.url)
        if target is None:
            target = self._target(request.url)
        if egress is not None:
            key: PoolKey = (*target.origin, egress, True)
            head = _head(request, target, None)
        else:
            proxy = self._proxy(target) if self._proxies else None
            key = (*target.origin, proxy, False)
            head = _head(request, target, proxy)
        body = request.content
        await self._acquire_slot()
        connection: _Connection | None = None
        try:
            connection = self._take_idle(key)
            kept = connection is not None
            if connection is None:
                connection = await self._connect(key, loop)
            connection.start(head, body, self._read_timeout)
            while not connection.head_done:
                error = connection.error
                if error is not None:
                    if error == _TIMED_OUT:
                        raise UpstreamTimeout("the upstream did not answer in time")
                    if kept and not connection.answered:
                        # A kept-alive connection the upstream closed as it went idle, before any
                        # byte of an answer: the request goes once more, on a new connection.
                        kept = False
                        connection.close()
                        connection = await self._connect(key, loop)
                        connection.start(head, body, self._read_timeout)
                        continue
                    raise UpstreamCut(error)
                await connection.wait()
        except BaseException:
            self._free_slot()
            if connection is not None:
                connection.close()
            raise
        return PoolResponse(connection, self)

    async def probe(self, url: str, egress: str) -> None:
        """Open a tunnel through ``egress`` to ``url``'s host and close it: :class:`UpstreamProxyError`
        when the proxy cannot be reached, hangs or refuses (its password, the tunnel). It tells a
        proxy's answer to a forwarded plain-http call from the upstream's (EGRESS-2)."""
        target = _Target.of(url)
        connection = await self._connect((*target.origin, egress, True), asyncio.get_running_loop())
        connection.close()

    def _target(self, url: str) -> _Target:
        if len(self._targets) >= _MAX_TARGETS:
            self._targets.clear()
        target = self._targets[url] = _Target.of(url)
        return target

    def release(self, connection: _Connection) -> None:
        """The exchange is over: keep the connection for the next request, or close it."""
        connection.finish()
        if connection.loop is not self._loop:  # from a loop the pool has left: its slot left too
            connection.close()
            return
        self._free_slot()
        keep = self._keepalive_s
        if connection.kept_for is not None:  # the upstream keeps it less: not to be reused then
            keep = min(keep, connection.kept_for - KEEP_ALIVE_MARGIN_S)
        if keep <= 0 or not connection.reusable:
            connection.close()
            return
        idle = self._idle.setdefault(connection.key, [])
        idle.append(connection)
        connection.idle.set_in(keep)

    async def aclose(self) -> None:
        self._close_all()

    def close_proxy(self, proxy: str) -> None:
        """Close every connection through ``proxy`` (a changed egress, EGRESS-1)."""
        for key in [key for key in self._idle if key[3] == proxy]:
            for connection in self._idle.pop(key):
                connection.close()
        for connection in list(self._open):
            if connection.key[3] == proxy and connection.loop is self._loop:
                connection.close()

    def _close_all(self) -> None:
        """Close every connection (on the running loop): its own loop's now, another running
        loop's from that loop's thread; a closed loop's transports cannot be told any more."""
        connections, self._open = list(self._open), weakref.WeakSet()
        self._idle = {}
        running = asyncio.get_running_loop()
        for connection in connections:
            loop = connection.loop
            if loop is running or not (loop.is_closed() or loop.is_running()):
                connection.close()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(connection.close)

    # -- the pool --------------------------------------------------------------------------------

    async def _acquire_slot(self) -> None:
        if self._busy >= self._limit:
            assert self._loop is not None
            waiter = self._loop.create_future()
            self._queue.append(waiter)
            try:
                await waiter
            except BaseException:
                if not waiter.cancelled() and waiter.done():
                    self._free_slot()  # handed a slot while being cancelled: pass it on
                raise
            return  # the slot was handed over by _free_slot
        self._busy += 1

    def _free_slot(self) -> None:
        while self._queue:
            waiter = self._queue.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot moves to the waiter; _busy stays
                return
        self._busy -= 1

    def _take_idle(self, key: PoolKey) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            connection.idle.at = None  # in use: its idle timer fires idle, or is set again
            if not connection.closed and connection.transport is not None:
                if not connection.transport.is_closing():
                    return connection
                connection.close()  # closing already (its end not seen yet): never reused
        return None

    def _expire(self, connection: _Connection) -> None:
        """Idle for the whole keep-alive since its last release: closed."""
        idle = self._idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)
        connection.close()

    async def _connect(self, key: PoolKey, loop: asyncio.AbstractEventLoop) -> _Connection:
        scheme, host, port, proxy, _tunnel = key
        factory: Callable[[], _Connection] = lambda: _Connection(key, loop)  # noqa: E731
        try:
            async with asyncio.timeout(self._connect_timeout):
                if proxy is None:
                    tls = self._tls if scheme == "https" else None
                    _, connection = await loop.create_connection(
                        factory, host, port, ssl=tls, server_hostname=host if tls else None
                    )
                elif proxy.startswith("socks"):
                    connection = await self._through_socks(key, loop, factory)
                else:
                    connection = await self._through_proxy(key, loop, factory)
                if connection.transport is not None:
                    probe_when_idle(connection.transport)
                connection.on_idle_expired = self._expire
                self._open.add(connection)
                return connection
        except TimeoutError:
            if proxy is not None:  # EGRESS-2: an unroutable proxy, or TLS to a plain one, that hung
                raise UpstreamProxyError("the proxy did not answer in time") from None
            raise UpstreamTimeout(f"connecting to {host}:{port} timed out") from None
        except UpstreamProxyError:
            raise
        except (OSError, ssl.SSLError, ValueError) as exc:  # ValueError: a host asyncio refuses
            if proxy is not None:
                raise UpstreamProxyError(f"proxy: {type(exc).__name__}") from None
            raise UpstreamConnectError(f"{type(exc).__name__}: {exc}") from None

    async def _through_socks(
        self, key: PoolKey, loop: asyncio.AbstractEventLoop, factory: Callable[[], _Connection]
    ) -> _Connection:
        """A connection through a SOCKS5 proxy (python-socks opens it; ``socks5h``: the proxy
        resolves the host), then TLS to the upstream for https. python-socks is imported here, by
        the first SOCKS egress: a gateway without one never loads it (issue #49)."""
        from python_socks import ProxyError, ProxyType
        from python_socks.async_.asyncio import Proxy as SocksProxy

        scheme, host, port, proxy, _tunnel = key
        assert proxy is not None
        address = SocksAddress.of(proxy)
        try:
            socks = SocksProxy(
                ProxyType.SOCKS5,
                address.host,
                address.port,
                address.username,
                address.password,
                rdns=address.rdns,
            )
            sock = await socks.connect(host, port)
        except ProxyError as exc:  # the SOCKS proxy refused (python-socks)
            raise UpstreamProxyError(f"the proxy refused: {type(exc).__name__}") from None
        tls = self._tls if scheme == "https" else None
        _, connection = await loop.create_connection(
            factory, sock=sock, ssl=tls, server_hostname=host if tls else None
        )
        return connection

    async def _through_proxy(
        self, key: PoolKey, loop: asyncio.AbstractEventLoop, factory: Callable[[], _Connection]
    ) -> _Connection:
        scheme, host, port, proxy, tunnel_always = key
        assert proxy is not None
        parsed = urllib.parse.urlsplit(proxy)
        proxy_port = parsed.port or DEFAULT_PORTS.get(parsed.scheme, 80)
        proxy_host = parsed.hostname or ""
        proxy_tls = self._tls if parsed.scheme == "https" else None  # TLS to the proxy itself
        if scheme == "http" and not tunnel_always:  # absolute-form requests straight to the proxy
            _, connection = await loop.create_connection(
                factory,
                proxy_host,
                proxy_port,
                ssl=proxy_tls,
                server_hostname=proxy_host if proxy_tls else None,
            )
            return connection
        transport, tunnel = await loop.create_connection(
            lambda: _Tunnel(loop),
            proxy_host,
            proxy_port,
            ssl=proxy_tls,
            server_hostname=proxy_host if proxy_tls else None,
        )
        connect = f"CONNECT {host}:{port} HTTP/1.1\r\nhost: {host}:{port}\r\n"
        authorization = _proxy_authorization(proxy)
        if authorization:
            connect += f"proxy-authorization: {authorization}\r\n"
        transport.write((connect + "\r\n").encode("latin-1"))
        try:
            answer = await tunnel.answer
        except ConnectionError as exc:
            transport.close()
            raise UpstreamProxyError(str(exc)) from None
        status_line = answer.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2 or not status_line[1].startswith(b"2"):
            transport.close()
            status = status_line[1].decode("latin-1", "replace")[:3] if len(status_line) > 1 else "?"
            raise UpstreamProxyError(f"the proxy refused the tunnel (HTTP {status})")
        if scheme == "http":  # a plain tunnel: the connection speaks HTTP through it as it is
            connection = factory()
            transport.set_protocol(connection)
            connection.connection_made(transport)
            return connection
        connection = factory()
        tls_transport = await loop.start_tls(transport, connection, self._tls, server_hostname=host)
        if tls_transport is None:
            raise UpstreamProxyError("the proxy tunnel closed during the TLS handshake")
        connection.connection_made(tls_transport)
        return connection

    def _proxy(self, target: _Target) -> str | None:
        """The environment's proxy for the target's scheme and host (``None``: go direct)."""
        scheme, host = target.origin[0], target.origin[1]
        key = (scheme, host)
        if key not in self._proxy_of_host:
            bypass = urllib.request.proxy_bypass(host)  # NO_PROXY; once per host
            self._proxy_of_host[key] = None if bypass else self._proxies.get(scheme)
        return self._proxy_of_host[key]


class _Target:
    """What a URL gives every request to it: where to connect, and the start of the head."""

    __slots__ = ("absolute", "host", "line", "origin", "url")

    def __init__(self, url: str, origin: Origin, host: str, path: str) -> None:
        self.url = url
        self.origin = origin
        self.host = host  # the Host header's value
        self.line = path  # the origin-form request target
        self.absolute = url  # the absolute-form target (to an HTTP proxy, for http URLs)

    @classmethod
    def of(cls, url: str) -> _Target:
        parsed = urllib.parse.urlsplit(url)
        scheme = parsed.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parsed.hostname:
            raise UpstreamConnectError(f"not an http(s) URL: {scheme or '?'}://…")
        host = parsed.hostname.encode("idna").decode("ascii")  # what DNS, TLS (SNI) and Host use
        port = parsed.port or DEFAULT_PORTS[scheme]
        netloc = host if parsed.port is None else f"{host}:{parsed.port}"
        if ":" in host:
            netloc = f"[{host}]" if parsed.port is None else f"[{host}]:{parsed.port}"
        path = parsed.path or "/"
        if parsed.query:
            path += "?" + parsed.query
        return cls(url, (scheme, host, port), netloc, path)


def _head(request: UpstreamRequest, target: _Target, proxy: str | None) -> bytes:
    """The request line and headers: Host first unless given, the request's headers, then
    Content-Length and Accept-Encoding unless given."""
    headers = request.headers
    absolute = proxy is not None and target.origin[0] == "http"
    parts = [request.method, " ", target.absolute if absolute else target.line, " HTTP/1.1\r\n"]
    if "host" not in headers:
        parts += ("host: ", target.host, "\r\n")
    for name, value in headers.items():
        parts += (name, ": ", value, "\r\n")
    if "content-length" not in headers:
        parts += ("content-length: ", str(len(request.content)), "\r\n")
    lines = 1  # the request line's own part ends it
    if "accept-encoding" not in headers:
        parts.append("accept-encoding: identity\r\n")  # relayed byte for byte: never compressed
        lines += 1
    if absolute and proxy is not None:
        authorization = _proxy_authorization(proxy)
        if authorization:
            parts += ("proxy-authorization: ", authorization, "\r\n")
    parts.append("\r\n")
    head = "".join(parts)
    # Every other line is ended by a part that is CRLF alone, and no name or value may add a CR or
    # LF (header injection): counted in C (a generator over the parts was 3 % of a call's bytecodes).
    # (a value that is CRLF alone counts as a line end, but then ends the head early: refused too).
    lines += parts.count("\r\n")
    if head.count("\n") != lines or head.count("\r") != lines or head.find("\r\n\r\n") != len(head) - 4:
        raise ValueError("a request header holds a line break")
    return head.encode("latin-1")


def _proxy_authorization(proxy: str) -> str | None:
    parsed = urllib.parse.urlsplit(proxy)
    if parsed.username is None:
        return None
    pair = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")
