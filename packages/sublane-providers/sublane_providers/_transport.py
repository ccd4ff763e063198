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
``AsyncClient`` through its public API; httpx is imported by the first of them, not at import (a
default start makes none, and httpx brings click, rich and pygments with it when they are
installed: 4.5 MB resident, issue #49).

EGRESS-1: every call leaves through the egress of the account it is for
(:func:`~sublane_providers.current_egress`): the model pool keys its connections by proxy, the
WebSocket is opened through it (websockets' own proxy support, python-socks for SOCKS), and
metadata calls go through one httpx client per proxy (httpx's ``proxy=``; httpx-socks's transport
for SOCKS).
Pools are never shared between proxies; :meth:`UpstreamClients.close_egress` closes a proxy's.
"""

from __future__ import annotations

import logging
import os
import ssl
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from websockets.exceptions import (
    ConnectionClosed,
    InvalidProxy,
    InvalidProxyMessage,
    InvalidProxyStatus,
    InvalidStatus,
    ProxyError,
    WebSocketException,
)

from sublane_core import Settings
from sublane_providers._egress import SocksAddress, current_egress
from sublane_providers._http1 import Http1Pool
from sublane_providers._session import SessionClosed, SessionEgressFailed, UpstreamUnreachable
from sublane_providers._upstream import UpstreamRequest, UpstreamResponse

_log = logging.getLogger("sublane.transport")

MODEL_CONNECTIONS = 1024
METADATA_CONNECTIONS = 64
#: How long an idle upstream connection is kept for the next request: Go's and reqwest's default
#: (reqwest is the Codex CLI's client), below what Cloudflare keeps an idle HTTP/1.1 connection in
#: front of the Codex upstream (400 s) and what common NATs keep an idle flow (AWS's 350 s, Azure's
#: 240 s). A coding agent's next call after a tool run of a minute finds its connection open
#: instead of paying TCP and TLS handshakes (issue #49); an upstream that keeps idle connections
#: less says so (``Keep-Alive: timeout=``), and the pool keeps them less.
KEEPALIVE_S = 90.0

if TYPE_CHECKING:
    import httpx
    from websockets.asyncio.client import ClientConnection


def _socks_errors() -> tuple[type[Exception], ...]:
    """python-socks' failures (refused, unreachable, timed out). Imported when an ``except`` clause
    asks, after something failed: python-socks, httpx-socks and websockets' client are loaded only
    by a SOCKS egress or an upstream WebSocket, never by a default start (issue #49)."""
    from python_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError

    return (ProxyError, ProxyConnectionError, ProxyTimeoutError)


def _connect_timeout_s(settings: Settings) -> float:
    """How long connecting (to a proxy too) may take; reading waits ``header_timeout_s``."""
    return min(30.0, settings.header_timeout_s)


def _timeout(settings: Settings) -> httpx.Timeout:
    import httpx  # on first use: see the module's docstring (issue #49)

    return httpx.Timeout(settings.header_timeout_s, connect=_connect_timeout_s(settings))


def _metadata_client(settings: Settings, tls: ssl.SSLContext, proxy: str | None = None) -> httpx.AsyncClient:
    import httpx  # on first use: see the module's docstring (issue #49)

    limits = httpx.Limits(max_connections=METADATA_CONNECTIONS, max_keepalive_connections=None)
    timeout = _timeout(settings)
    if proxy is not None and proxy.startswith("socks"):
        # httpx-socks (python-socks, as the model pool uses): httpx's own SOCKS path leaves a socket
        # open when the proxy refuses the password (httpcore 1.0.9).
        from httpx_socks import AsyncProxyTransport
        from python_socks import ProxyType

        address = SocksAddress.of(proxy)
        transport = AsyncProxyTransport(
            proxy_type=ProxyType.SOCKS5,
            proxy_host=address.host,
            proxy_port=address.port,
            username=address.username,
            password=address.password,
            rdns=address.rdns,
            verify=tls,
            limits=limits,
        )
        return httpx.AsyncClient(
            transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
        )
    return httpx.AsyncClient(
        verify=tls,
        limits=limits,
        timeout=timeout,
        follow_redirects=False,
        proxy=proxy,
        trust_env=proxy is None,  # without an egress: honour HTTPS_PROXY for a corporate proxy
    )


class MetadataHttp(Protocol):
    """What an adapter's metadata calls need: httpx's ``get`` and ``post`` (an ``AsyncClient``
    fits, as does :class:`MetadataClients`, which routes each call through its account's egress)."""

    async def get(
        self,
        url: str,
        *,
        params: Any = ...,
        headers: Any = ...,
        timeout: Any = ...,  # noqa: ASYNC109  (httpx's own per-call timeout)
        follow_redirects: Any = ...,
    ) -> httpx.Response: ...

    async def post(
        self,
        url: str,
        *,
        json: Any = ...,
        data: Any = ...,
        headers: Any = ...,
        timeout: Any = ...,  # noqa: ASYNC109
    ) -> httpx.Response: ...


def _not_refused_by_proxy(response: httpx.Response) -> httpx.Response:
    """A plain-http call goes through an HTTP proxy in absolute form, so the proxy's refusal comes
    back as an answer: 407 is the proxy's, never the upstream's (EGRESS-2), and raised as httpx's
    ``ProxyError`` like a refused tunnel."""
    if response.status_code == 407 and current_egress() is not None:
        import httpx  # loaded already: the response is httpx's

        raise httpx.ProxyError("the egress proxy refused the request (407)", request=response.request)
    return response


class MetadataClients:
    """Metadata calls (token refresh, quota reads, model lists, sign-in exchanges) through the
    egress of the account they are for: one httpx ``AsyncClient`` per proxy, made on first use
    (the environment's too: a gateway that makes no metadata call never imports httpx, issue #49).
    The adapters call :meth:`get` and :meth:`post` with httpx's keyword arguments and get httpx's
    ``Response``; which client carries the call is this class's business."""

    def __init__(self, settings: Settings, tls: ssl.SSLContext) -> None:
        self._settings = settings
        self._tls = tls
        self._environment: httpx.AsyncClient | None = None
        self._by_proxy: dict[str, httpx.AsyncClient] = {}

    def client(self) -> httpx.AsyncClient:
        """The client of the current egress."""
        proxy = current_egress()
        if proxy is None:
            if self._environment is None:
                self._environment = _metadata_client(self._settings, self._tls)
            return self._environment
        client = self._by_proxy.get(proxy)
        if client is None:
            client = self._by_proxy[proxy] = _metadata_client(self._settings, self._tls, proxy)
        return client

    async def get(self, url: str, **options: Any) -> httpx.Response:
        return await self.request("GET", url, **options)

    async def post(self, url: str, **options: Any) -> httpx.Response:
        return await self.request("POST", url, **options)

    async def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        """httpx's ``request`` through the current egress (a proxy's refusal is a ``ProxyError``).

        A call's own ``timeout`` bounds reading; connecting (to a proxy too, EGRESS-2) keeps the
        connect timeout, so an unreachable proxy fails as a connect error, not as a slow answer."""
        import httpx  # on first use: see the module's docstring (issue #49)

        if "timeout" in options:
            asked = httpx.Timeout(options["timeout"])
            connect = _connect_timeout_s(self._settings)
            if asked.connect is None or asked.connect > connect:
                options["timeout"] = httpx.Timeout(
                    connect=connect, read=asked.read, write=asked.write, pool=asked.pool
                )
        try:
            return _not_refused_by_proxy(await self.client().request(method, url, **options))
        except _socks_errors() as exc:  # httpx-socks raises python-socks' errors
            raise httpx.ProxyError(f"the egress proxy failed: {type(exc).__name__}") from None

    async def close_proxy(self, proxy: str) -> None:
        client = self._by_proxy.pop(proxy, None)
        if client is not None:
            await client.aclose()

    async def aclose(self) -> None:
        made = [] if self._environment is None else [self._environment]
        clients, self._by_proxy = [*made, *self._by_proxy.values()], {}
        for client in clients:
            await client.aclose()


class CertificatesOnFirstHandshake(ssl.SSLContext):
    """What ``ssl.create_default_context()`` makes, except that the system's CA certificates are
    read by the first TLS handshake instead of at start: the bundle is 1.2 MB resident (and ~20 ms
    of CPU once) that a gateway with no account never uses (issue #49). Every handshake goes
    through ``wrap_bio`` (asyncio's and uvloop's TLS, anyio's for httpx) or ``wrap_socket``, and
    both make sure the certificates are loaded first."""

    def __init__(self, protocol: int) -> None:
        # ssl.SSLContext reads ``protocol`` when the object is made; made with PROTOCOL_TLS_CLIENT
        # (as create_default_context does), it verifies certificates and host names.
        del protocol
        super().__init__()
        self.certificates_loaded = False
        keylog = os.environ.get("SSLKEYLOGFILE")  # as create_default_context honours it
        if keylog and not sys.flags.ignore_environment:
            self.keylog_filename = keylog

    def load_certificates(self) -> None:
        """Read the system's CA certificates, once."""
        if not self.certificates_loaded:
            self.load_default_certs(ssl.Purpose.SERVER_AUTH)
            self.certificates_loaded = True

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_certificates()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_certificates()
        return super().wrap_socket(*args, **kwargs)


class UpstreamClients:
    """The metadata clients (token refresh, quota, model lists) and the pool for model requests."""

    def __init__(self, settings: Settings) -> None:
        # One TLS context for all pools (each costs megabytes), its CA bundle read when first used.
        tls = CertificatesOnFirstHandshake(ssl.PROTOCOL_TLS_CLIENT)
        self.metadata = MetadataClients(settings, tls)
        self._models = Http1Pool(
            tls,
            limit=MODEL_CONNECTIONS,
            keepalive_s=KEEPALIVE_S,
            connect_timeout=_connect_timeout_s(settings),
            read_timeout=settings.header_timeout_s,
        )

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        """Send a model request (response body not read yet) through the current egress."""
        return await self._models.send(request, current_egress())

    async def probe_egress(self, url: str, egress: str) -> None:
        """Whether ``egress`` opens a tunnel to ``url``'s host within the connect timeout:
        :class:`UpstreamProxyError` (an :class:`EgressFailed`) when it does not (EGRESS-2)."""
        await self._models.probe(url, egress)

    async def close_egress(self, proxy: str) -> None:
        """A proxy no account uses any more: close its connections (EGRESS-1)."""
        await self.metadata.close_proxy(proxy)
        self._models.close_proxy(proxy)

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


def _websocket_egress_errors() -> tuple[type[Exception], ...]:
    """What an upstream WebSocket's egress proxy fails with: websockets' proxy errors, python-socks'
    refusal and timeout (imported when an ``except`` clause asks)."""
    from python_socks import ProxyError as SocksProxyError
    from python_socks import ProxyTimeoutError as SocksTimeoutError

    return (
        InvalidProxy,
        InvalidProxyMessage,
        InvalidProxyStatus,
        ProxyError,
        SocksProxyError,
        SocksTimeoutError,
    )


async def connect_websocket(
    url: str, headers: Mapping[str, str], *, open_timeout: float, max_frame_bytes: int
) -> WebSocket:
    """Open an upstream WebSocket through the current egress; raises :class:`WebSocketRefused` or
    :class:`UpstreamUnreachable` (:class:`SessionEgressFailed` when the proxy failed)."""
    from websockets.asyncio.client import connect

    egress = current_egress()
    try:
        connection = await connect(
            url,
            additional_headers=dict(headers),
            max_size=max_frame_bytes,
            open_timeout=open_timeout,
            ping_interval=None,
            user_agent_header=None,
            proxy=egress if egress is not None else True,  # True: the environment's proxy
        )
    except _websocket_egress_errors() as exc:
        raise SessionEgressFailed(type(exc).__name__) from None
    except TimeoutError:
        raise UpstreamUnreachable("TimeoutError") from None
    except OSError as exc:
        if egress is not None:  # the proxy itself could not be reached
            raise SessionEgressFailed(type(exc).__name__) from None
        raise UpstreamUnreachable(type(exc).__name__) from None
    except InvalidStatus as refused:
        response = refused.response
        raise WebSocketRefused(
            response.status_code, dict(response.headers.raw_items()), bytes(response.body or b"")
        ) from None
    except WebSocketException as exc:
        raise UpstreamUnreachable(type(exc).__name__) from None
    return WebSocket(connection)
