"""The one transport module: every upstream HTTP request and WebSocket goes through here (STYLE.md),
so the client libraries (httpx, aiohttp, websockets) can be swapped and benchmarked in one file.

Model requests are httpx requests sent over aiohttp (httpx-aiohttp's transport): the pipeline keeps
httpx's request and response types, while connections, HTTP parsing and the pool are aiohttp's —
a per-host queue of idle connections and a C parser, where httpcore scans every connection of its
pool whenever a request starts or a connection closes and checks each reused socket with a
``select()``. Measured in BENCHMARKS.md (issue #19): about half the gateway's CPU per request.
Metadata calls (token refresh, quota, model lists) are rare and stay on httpx's own transport.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Mapping

import aiohttp
import httpx
import websockets
from httpx_aiohttp import AiohttpTransport
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from sublane_core import Settings
from sublane_providers._session import SessionClosed, UpstreamUnreachable

_log = logging.getLogger("sublane.transport")

MODEL_CONNECTIONS = 1024
METADATA_CONNECTIONS = 64
KEEPALIVE_S = 30.0  # how long an idle upstream connection is kept for the next request


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


class ModelTransport(AiohttpTransport):
    """httpx-aiohttp's transport over our own session (environment proxies honoured, bodies left
    encoded as they came), telling refused connections apart from timeouts: httpx-aiohttp maps
    every aiohttp connection error to ``httpx.ConnectTimeout``, and the pipeline answers a timeout
    differently from an unreachable host (which may move to the provider's next host, GEM-4)."""

    def __init__(self, tls: ssl.SSLContext, connections: int) -> None:
        super().__init__(verify=tls, trust_env=True, client=self._session_factory(tls, connections))

    @staticmethod
    def _session_factory(tls: ssl.SSLContext, connections: int) -> Callable[[], aiohttp.ClientSession]:
        def session() -> aiohttp.ClientSession:  # made at the first request, inside the running loop
            connector = aiohttp.TCPConnector(limit=connections, ssl=tls, keepalive_timeout=KEEPALIVE_S)
            return aiohttp.ClientSession(connector=connector, trust_env=True, auto_decompress=False)

        return session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except httpx.TimeoutException as exc:
            cause = exc.__cause__
            if cause is None or isinstance(cause, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
                raise
            if isinstance(cause, aiohttp.ClientConnectorError):
                raise httpx.ConnectError(str(exc), request=request) from cause
            raise httpx.RemoteProtocolError(str(exc), request=request) from cause


class UpstreamClients:
    """A metadata client (token refresh, quota, model lists) and the client for model requests."""

    def __init__(self, settings: Settings) -> None:
        tls = ssl.create_default_context()  # one TLS context for all pools (each costs megabytes)
        self.metadata = _metadata_client(settings, tls)
        self._models = httpx.AsyncClient(
            transport=ModelTransport(tls, MODEL_CONNECTIONS),
            timeout=_timeout(settings),
            follow_redirects=False,
            trust_env=False,  # the session reads HTTPS_PROXY itself: httpx's proxy mounts would bypass it
        )

    async def send(self, request: httpx.Request) -> httpx.Response:
        """Send a model request (response body not read yet)."""
        return await self._models.send(request, stream=True)

    async def aclose(self) -> None:
        for client in (self.metadata, self._models):
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
