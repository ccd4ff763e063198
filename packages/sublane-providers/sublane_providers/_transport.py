"""The one transport module: every upstream HTTP request and WebSocket goes through here (STYLE.md),
so the client libraries (httpx, websockets, the httptools pool) can be swapped and benchmarked in
one file.

Model requests are :class:`~sublane_providers.UpstreamRequest` values sent by
:class:`~sublane_providers._http1.Http1Pool`, a lean keep-alive HTTP/1.1 pool on httptools, whose
answers are :class:`~sublane_providers.UpstreamResponse` objects: SubLane's own small interface,
so the per-request cost is a fraction of httpx's or aiohttp's clients (both measured in
BENCHMARKS.md, "The hot path (issue #19)") without any object that imitates another library's. An
unreachable host is ``UpstreamConnectError`` (the pipeline may move to the provider's next host,
GEM-4), a silent one ``UpstreamTimeout``, and an answer cut mid-way is delivered up to the cut,
then ``UpstreamCut``. Metadata calls (token refresh, quota, model lists) are rare and use httpx's
``AsyncClient`` through its public API.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping

import httpx
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from sublane_core import Settings
from sublane_providers._http1 import Http1Pool
from sublane_providers._session import SessionClosed, UpstreamUnreachable
from sublane_providers._upstream import UpstreamRequest, UpstreamResponse

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


class UpstreamClients:
    """A metadata client (token refresh, quota, model lists) and the client for model requests."""

    def __init__(self, settings: Settings) -> None:
        tls = ssl.create_default_context()  # one TLS context for all pools (each costs megabytes)
        self.metadata = _metadata_client(settings, tls)
        timeout = _timeout(settings)
        self._models = Http1Pool(
            tls,
            limit=MODEL_CONNECTIONS,
            keepalive_s=KEEPALIVE_S,
            connect_timeout=timeout.connect,
            read_timeout=timeout.read,
        )

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
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
