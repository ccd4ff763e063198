"""A byte relay in front of the mock: the floor under any proxy's S1 figure on this machine.

``python bench/relay.py --port N --upstream-port M`` accepts connections on ``127.0.0.1:N`` and
pipes each one, bytes untouched and without parsing a thing, to ``127.0.0.1:M`` (uvloop, one
process). ``bench/run.py`` starts it on the gateway's core and calls it in S1 beside the mock and
SubLane: what it adds is what one more process between the driver and the mock costs here —
the loopback hops and, mostly, waking a core that was idle — so "SubLane minus relay" is the part
of SubLane's figure that its own work decides (BENCHMARKS.md, issue #19).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import cast

import uvloop


class _Side(asyncio.Protocol):
    """One end of a piped connection: what it reads goes to its peer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Side | None = None
        self.early: list[bytes] = []  # read before the peer was connected

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio subclasses

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.early.append(data)
        else:
            peer.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.close()


class _Client(_Side):
    """The accepted side: connects its upstream side, then pipes both ways."""

    def __init__(self, upstream_port: int) -> None:
        super().__init__()
        self._upstream_port = upstream_port
        self._connecting: asyncio.Task[None] | None = None  # held: the loop keeps tasks weakly

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._connecting = asyncio.ensure_future(self._connect())

    async def _connect(self) -> None:
        upstream = _Side()
        loop = asyncio.get_running_loop()
        try:
            await loop.create_connection(lambda: upstream, "127.0.0.1", self._upstream_port)
        except OSError:
            if self.transport is not None:
                self.transport.close()
            return
        upstream.peer, self.peer = self, upstream
        assert upstream.transport is not None
        for data in self.early:
            upstream.transport.write(data)
        self.early.clear()


async def _serve(port: int, upstream_port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Client(upstream_port), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream-port", type=int, required=True)
    args = parser.parse_args()
    uvloop.run(_serve(args.port, args.upstream_port))


if __name__ == "__main__":
    main()
