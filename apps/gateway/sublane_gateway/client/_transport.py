"""The HTTP clients that carry model requests upstream, behind one small module (STYLE.md).

httpx's connection pool scans all of its connections whenever a request starts or a connection
closes, so one pool of hundreds of streaming connections spends more time scanning than relaying
(measured in BENCHMARKS.md). Model requests are therefore spread over several smaller pools; each
pool keeps its own keep-alive connections, which is fine for a handful of upstream hosts.
"""

from __future__ import annotations

import itertools
import ssl

import httpx

from sublane_core import Settings

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
