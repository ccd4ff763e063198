"""The one transport module: every upstream HTTP request and WebSocket goes through here (STYLE.md),
so the client libraries (httpx, websockets) can be swapped and benchmarked in one file.

httpx's connection pool scans all of its connections whenever a request starts or a connection
closes, so one pool of hundreds of streaming connections spends more time scanning than relaying
(measured in BENCHMARKS.md). Model requests are therefore spread over several smaller pools; each
pool keeps its own keep-alive connections, which is fine for a handful of upstream hosts.
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import Mapping

import httpx
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from sublane_core import Settings
from sublane_providers._session import SessionClosed, UpstreamUnreachable

_log = logging.getLogger("sublane.transport")

SHARDS = 8
CONNECTIONS_PER_SHARD = 128


def _client(settings: Settings, connections: int, tls: ssl.SSLContext) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        verify=tls,
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        timeout=httpx.Timeout(settings.header_timeout_s, connect=min(30.0, settings.header_timeout_s)),
        follow_redirects=False,
        trust_env=True,  # honour HTTPS_PROXY for a corporate egress proxy
    )


class UpstreamClients:
    """A metadata client (token refresh, quota, model lists) and sharded clients for model requests."""

    def __init__(self, settings: Settings, shards: int = SHARDS) -> None:
        tls = ssl.create_default_context()  # one TLS context for all pools (each costs megabytes)
        self.metadata = _client(settings, 64, tls)
        self._shards = tuple(_client(settings, CONNECTIONS_PER_SHARD, tls) for _ in range(shards))
        self._next = itertools.cycle(self._shards)

    async def send(self, request: httpx.Request) -> httpx.Response:
        """Send a model request (response body not read yet) on the next shard."""
        return await next(self._next).send(request, stream=True)

    async def aclose(self) -> None:
        for client in (self.metadata, *self._shards):
            await client.aclose()


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
