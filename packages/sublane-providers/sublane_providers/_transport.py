"""The one transport module: every upstream HTTP request and WebSocket goes through here (STYLE.md),
so the client libraries (httpx, aiohttp, websockets) can be swapped and benchmarked in one file.

Model requests are httpx requests sent by :class:`~sublane_providers._http1.Http1Pool`, a lean
keep-alive HTTP/1.1 pool on httptools: the pipeline keeps httpx's request and response types
while the per-request cost is a fraction of httpx's or aiohttp's clients (both measured in
BENCHMARKS.md, "The hot path (issue #19)"). An unreachable host stays ``httpx.ConnectError`` (the
pipeline may move to the provider's next host, GEM-4), a silent one a timeout, and an answer cut
mid-way is delivered up to the cut, then ``httpx.ReadError``.
Metadata calls (token refresh, quota, model lists) are rare and stay on httpx's own client.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from sublane_core import Settings
from sublane_providers._http1 import DEFAULT_PORTS, Http1Body, Http1Pool
from sublane_providers._session import SessionClosed, UpstreamUnreachable
from sublane_providers._wire import ModelRequest, Origin

_log = logging.getLogger("sublane.transport")

MODEL_CONNECTIONS = 1024
METADATA_CONNECTIONS = 64
KEEPALIVE_S = 30.0  # how long an idle upstream connection is kept for the next request
_MAX_URLS = 256  # parsed model URLs kept by a RequestBuilder


def _timeout(settings: Settings) -> httpx.Timeout:
    return httpx.Timeout(settings.header_timeout_s, connect=min(30.0, settings.header_timeout_s))


def _metadata_client(settings: Settings, tls: ssl.SSLContext) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        verify=tls,
        limits=httpx.Limits(max_connections=METADATA_CONNECTIONS, max_keepalive_connections=None),
        timeout=_timeout(settings),
        follow_redirects=False,
        trust_env=True,  # honour HTTPS_PROXY for a corporate egress proxy
    )


@dataclass(frozen=True, slots=True)
class _Target:
    """What a model URL gives every request to it: the parsed URL, the pool's origin, the request
    line and the Host value."""

    method: str
    url: httpx.URL
    origin: Origin
    line: str
    host: str


class RequestBuilder:
    """``client.build_request`` for model requests, cheaper: each URL is parsed once, and a body
    with lower-case ``str`` headers becomes a :class:`~sublane_providers._wire.ModelRequest` whose
    headers and wire head are merged here the way httpx would (Host first, the client's default
    headers that ours do not replace, ours, then Content-Length) with the client's timeout.
    Anything else (mixed-case names, an empty body, ``httpx.Headers``) goes through httpx's types;
    while the client holds cookies, its own ``build_request`` builds (it adds them).
    """

    __slots__ = ("_client", "_defaults", "_defaults_of", "_targets", "_timeout")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client
        self._timeout = client.timeout.as_dict()
        self._targets: dict[tuple[str, str], _Target] = {}
        self._defaults_of: httpx.Headers | None = None
        self._defaults: tuple[tuple[str, str, str], ...] = ()  # (name as sent, lower-case, value)

    def build(
        self, method: str, url: str, *, content: bytes, headers: Mapping[str, str] | httpx.Headers
    ) -> httpx.Request:
        client = self._client
        if len(client.cookies.jar):
            return client.build_request(method, url, content=content, headers=headers)
        target = self._targets.get((method, url))
        if target is None:
            target = self._target(method, url)
        if type(headers) is dict and content:
            pairs = self._pairs(target, headers, len(content))
            if pairs is not None:
                extensions: dict[str, Any] = {"timeout": self._timeout}
                return ModelRequest.of(
                    target.method, target.url, target.origin, target.line, pairs, content, extensions
                )
        merged = httpx.Headers(client.headers)
        merged.update(headers)
        return httpx.Request(
            method, target.url, headers=merged, content=content, extensions={"timeout": self._timeout}
        )

    def _pairs(self, target: _Target, headers: dict[str, str], length: int) -> list[tuple[str, str]] | None:
        """The headers as httpx would merge them; ``None`` when a name is not lower-case."""
        if self._client.headers is not self._defaults_of:
            self._snapshot_defaults()
        pairs: list[tuple[str, str]] = [] if "host" in headers else [("Host", target.host)]
        pairs += [(sent, value) for sent, name, value in self._defaults if name not in headers]
        for name, value in headers.items():
            if not name.islower():
                return None
            pairs.append((name, value))
        if "content-length" not in headers:
            pairs.append(("Content-Length", str(length)))
        return pairs

    def _snapshot_defaults(self) -> None:
        defaults = self._client.headers
        encoding = defaults.encoding
        self._defaults = tuple(
            (sent.decode(encoding), sent.decode(encoding).lower(), value.decode(encoding))
            for sent, value in defaults.raw
        )
        self._defaults_of = defaults

    def _target(self, method: str, url: str) -> _Target:
        key = (method, url)
        if len(self._targets) >= _MAX_URLS:
            self._targets.clear()
        parsed = httpx.URL(url)
        method = method.upper()
        scheme = parsed.scheme
        origin = (scheme, parsed.raw_host.decode("ascii"), parsed.port or DEFAULT_PORTS.get(scheme, 80))
        line = f"{method} {parsed.raw_path.decode('ascii')} HTTP/1.1\r\n"
        target = _Target(method, parsed, origin, line, parsed.netloc.decode("ascii"))
        self._targets[key] = target
        return target


class ChunkReader:
    """A model response's body read chunk by chunk with a bound on each wait that leaves the stream
    intact: ``read(within)`` gives the next bytes, ``None`` when nothing came within ``within``
    seconds (a heartbeat is due; read on), ``b""`` at the end; httpx errors as the body raises them.

    On the pool's bodies a bounded wait is one timer; on any other httpx stream, one task per read
    (a timed-out ``__anext__`` would end the stream).
    """

    __slots__ = ("_chunks", "_direct", "_pending")

    def __init__(self, response: httpx.Response) -> None:
        stream = response.stream
        self._direct = stream.read if isinstance(stream, Http1Body) else None
        self._chunks: AsyncIterator[bytes] | None = None
        if self._direct is None:
            self._chunks = response.aiter_raw().__aiter__()
        self._pending: asyncio.Future[bytes] | None = None

    async def read(self, within: float | None = None) -> bytes | None:
        if self._direct is not None:
            return await self._direct(within)
        if self._pending is None:
            assert self._chunks is not None
            self._pending = asyncio.ensure_future(anext(self._chunks))
        done, _ = await asyncio.wait((self._pending,), timeout=within)
        if not done:
            return None
        task, self._pending = self._pending, None
        try:
            return task.result()
        except StopAsyncIteration:
            return b""

    def cancel(self) -> None:
        """Stop a read left waiting (the task of the fallback)."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None


class UpstreamClients:
    """A metadata client (token refresh, quota, model lists) and the client for model requests."""

    def __init__(self, settings: Settings) -> None:
        tls = ssl.create_default_context()  # one TLS context for all pools (each costs megabytes)
        self.metadata = _metadata_client(settings, tls)
        self._models = Http1Pool(
            tls, limit=MODEL_CONNECTIONS, keepalive_s=KEEPALIVE_S, timeout=_timeout(settings)
        )

    async def send(self, request: httpx.Request) -> httpx.Response:
        """Send a model request (response body not read yet)."""
        return await self._models.send(request)

    async def aclose(self) -> None:
        await self.metadata.aclose()
        await self._models.aclose()


class WebSocketRefused(Exception):
    """The upstream answered the WebSocket handshake with an HTTP status."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        super().__init__(status)
        self.status, self.headers, self.body = status, headers, body


class WebSocket:
    """An open upstream WebSocket: text frames in and out."""

    __slots__ = ("_connection",)

    def __init__(self, connection: ClientConnection) -> None:
        self._connection = connection

    async def send(self, text: str) -> None:
        try:
            await self._connection.send(text)
        except ConnectionClosed:
            raise SessionClosed from None

    async def recv(self) -> str:
        try:
            message = await self._connection.recv(decode=True)
        except ConnectionClosed:
            raise SessionClosed from None
        return message if isinstance(message, str) else message.decode("utf-8", errors="replace")

    async def close(self) -> None:
        try:
            await self._connection.close()
        except Exception as exc:  # closing a broken socket: nothing left to do
            _log.debug("closing an upstream websocket failed: %s", type(exc).__name__)


async def connect_websocket(
    url: str, headers: Mapping[str, str], *, open_timeout: float, max_frame_bytes: int
) -> WebSocket:
    """Open an upstream WebSocket; raises :class:`WebSocketRefused` or :class:`UpstreamUnreachable`."""
    try:
        connection = await websockets.connect(
            url,
            additional_headers=dict(headers),
            max_size=max_frame_bytes,
            open_timeout=open_timeout,
            ping_interval=None,
            user_agent_header=None,
        )
    except InvalidStatus as refused:
        response = refused.response
        raise WebSocketRefused(
            response.status_code, dict(response.headers.raw_items()), bytes(response.body or b"")
        ) from None
    except (OSError, TimeoutError, WebSocketException) as exc:
        raise UpstreamUnreachable(type(exc).__name__) from None
    return WebSocket(connection)
