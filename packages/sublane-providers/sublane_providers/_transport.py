"""The one transport module: every upstream HTTP request and WebSocket goes through here (STYLE.md),
so the client libraries (httpx, aiohttp, websockets) can be swapped and benchmarked in one file.

Model requests are httpx requests sent over aiohttp (:class:`AiohttpTransport`): the pipeline keeps
httpx's request and response types, while connections, HTTP parsing and the pool are aiohttp's —
a per-host queue of idle connections and a C parser, where httpcore scans every connection of its
pool whenever a request starts or a connection closes and checks each reused socket with a
``select()``. Measured in BENCHMARKS.md ("The hot path (issue #19)").
Metadata calls (token refresh, quota, model lists) are rare and stay on httpx's own transport.

Why not the httpx-aiohttp package: it reports every aiohttp connection error as a connect
*timeout* (the pipeline answers a timeout differently from an unreachable host, which may move to
the provider's next host, GEM-4), and like aiohttp itself it drops what was buffered when the
upstream cuts the stream; the adapter below does neither.
"""

from __future__ import annotations

import collections
import logging
import ssl
import urllib.request
from collections.abc import AsyncIterator, Mapping

import aiohttp
import httpx
import websockets
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


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx requests over one aiohttp session (made at the first request, inside the running loop;
    bodies are left encoded as they came).

    ``HTTPS_PROXY``/``HTTP_PROXY`` and ``NO_PROXY`` are read once, at start: aiohttp's own
    ``trust_env`` reads the environment and ``~/.netrc`` in a worker thread on every request.
    """

    def __init__(self, tls: ssl.SSLContext, connections: int) -> None:
        self._tls = tls
        self._connections = connections
        self._session: aiohttp.ClientSession | None = None
        self._proxies = urllib.request.getproxies_environment()
        self._proxy_of_host: dict[tuple[str, str], str | None] = {}

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._connections, ssl=self._tls, keepalive_timeout=KEEPALIVE_S
            )
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        return self._session

    def _proxy(self, url: httpx.URL) -> str | None:
        """The environment's proxy for ``url``'s scheme and host (``None``: go direct)."""
        if not self._proxies:
            return None
        key = (url.scheme, url.host)
        if key not in self._proxy_of_host:
            bypass = urllib.request.proxy_bypass(url.host)  # NO_PROXY; once per host
            self._proxy_of_host[key] = None if bypass else self._proxies.get(url.scheme)
        return self._proxy_of_host[key]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw]
        try:
            answer = await self._open_session().request(
                request.method,
                str(request.url),
                headers=headers,
                data=await request.aread() or None,
                allow_redirects=False,
                compress=False,
                proxy=self._proxy(request.url),
                timeout=aiohttp.ClientTimeout(
                    sock_connect=timeout.get("connect"), sock_read=timeout.get("read")
                ),
            )
        except aiohttp.ClientProxyConnectionError as exc:
            raise httpx.ProxyError(str(exc), request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc), request=request) from exc
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise httpx.ReadTimeout(str(exc), request=request) from exc
        except aiohttp.ClientError as exc:  # closed before an answer, or a malformed one
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        return httpx.Response(
            answer.status,
            headers=answer.raw_headers,
            stream=_ResponseBody(answer, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (answer.reason or "").encode()},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _ResponseBody(httpx.AsyncByteStream):
    """The body as it arrives; a cut gives what came before it, then ``httpx.ReadError``."""

    def __init__(self, answer: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._answer = answer
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._answer.content
        try:
            while chunk := await content.readany():
                yield chunk
        except aiohttp.ClientPayloadError as exc:
            # aiohttp raises before handing over what it still holds: hand that over first.
            leftover = _buffered(content)
            if leftover:
                yield leftover
            raise httpx.ReadError(str(exc), request=self._request) from exc
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise httpx.ReadTimeout(str(exc), request=self._request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.ReadError(str(exc), request=self._request) from exc

    async def aclose(self) -> None:
        self._answer.release()  # an unfinished body closes its connection; a finished one is reused


def _buffered(content: aiohttp.StreamReader) -> bytes:
    """What the reader received before the cut and nobody read yet (aiohttp's reader has no public
    way to get it once the error is set; packages/sublane-providers/tests/test_transport.py pins
    this for the version in constraints.txt)."""
    chunks: collections.deque[bytes] | None = getattr(content, "_buffer", None)
    if not chunks:
        return b""
    data = b"".join(chunks)
    return data[getattr(content, "_buffer_offset", 0) :]


class UpstreamClients:
    """A metadata client (token refresh, quota, model lists) and the client for model requests."""

    def __init__(self, settings: Settings) -> None:
        tls = ssl.create_default_context()  # one TLS context for all pools (each costs megabytes)
        self.metadata = _metadata_client(settings, tls)
        self._models = httpx.AsyncClient(
            transport=AiohttpTransport(tls, MODEL_CONNECTIONS),
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
