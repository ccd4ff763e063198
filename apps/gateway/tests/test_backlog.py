"""A connection made takes others waiting in the listening socket's queue, a few per turn (issue #49).

uvloop accepts one connection per turn of the event loop; a gateway whose turns are long (a burst of
calls starting) took new clients at one per turn. Here a real uvicorn server on uvloop, with SubLane's
protocol and :class:`BacklogDrain`, is blocked while a client process opens many connections (all
wait in the kernel's queue), then runs turns with work in them: the connections are taken at the
drain's rate per turn (plus uvloop's own one), never more, and every one is served.
"""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import time
from typing import Any

import pytest
import uvicorn
import uvloop

from sublane_gateway._backlog import CROWD_S, DRAIN_LIMIT, SLOW_TURN_S, BacklogDrain, listening_socket
from sublane_gateway._connection_guard import guarded_http

CONNECTIONS = 120

# Opens N connections, sends a request on each, says so, then reads every answer when told to.
CLIENT = r"""
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
conns = []
for _ in range(n):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    conns.append(c)
print("connected", flush=True)
sys.stdin.readline()
ok = 0
for c in conns:
    c.settimeout(20)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(4096)
        if not chunk:
            break
        data += chunk
    ok += data.startswith(b"HTTP/1.1 200")
    c.close()
print(ok, flush=True)
"""


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def _taken_at_turns(backlog: BacklogDrain | None) -> tuple[list[int], int]:
    """The loop turn at which each connection was made, and how many answers the client got."""
    loop = asyncio.get_running_loop()
    turns = 0
    made: list[int] = []

    class Counted(guarded_http(10.0, 30.0, backlog)):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            made.append(turns)
            super().connection_made(transport)

    config = uvicorn.Config(
        _app, host="127.0.0.1", port=0, http=Counted, lifespan="off", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    listener = listening_socket(config)
    assert listener is not None
    if backlog is not None:
        backlog.listener = listener
    port = listener.getsockname()[1]
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        await asyncio.sleep(0.01)
    client = subprocess.Popen(  # noqa: ASYNC220 (blocking on purpose: it holds the event loop)
        [sys.executable, "-c", CLIENT, str(port), str(CONNECTIONS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert client.stdout is not None and client.stdin is not None
        # Blocking here blocks the event loop: every connection waits in the kernel's queue.
        assert client.stdout.readline() == b"connected\n"

        def busy_turn() -> None:  # a turn with ~3 ms of work in it, as a busy gateway's
            nonlocal turns
            turns += 1
            time.sleep(0.003)
            if len(made) < CONNECTIONS:
                loop.call_soon(busy_turn)

        loop.call_soon(busy_turn)
        async with asyncio.timeout(30):
            while len(made) < CONNECTIONS:
                await asyncio.sleep(0.005)
        client.stdin.write(b"go\n")
        client.stdin.close()
        answered = int(await asyncio.to_thread(client.stdout.readline))
    finally:
        client.kill()
        client.wait()
        for pipe in (client.stdin, client.stdout):
            if pipe is not None:
                pipe.close()
        server.should_exit = True
        await serving
    return made, answered


class _RecordedDrain(BacklogDrain):
    """The drain, with what each look took."""

    def __init__(self, per_turn: int) -> None:
        super().__init__(per_turn)
        self.looks: list[int] = []

    def drain(self, loop: asyncio.AbstractEventLoop, make_protocol: Any) -> int:
        taken = super().drain(loop, make_protocol)
        if taken:
            self.looks.append(taken)
        return taken


def test_a_busy_loop_takes_waiting_connections_at_the_drains_rate_per_turn() -> None:
    per_turn = 8
    backlog = _RecordedDrain(per_turn)
    made, answered = uvloop.run(_taken_at_turns(backlog))
    assert len(made) == CONNECTIONS
    per_turn_made = sorted(collections.Counter(made).items())
    # uvloop alone: one connection per turn, ~CONNECTIONS turns; drained: ~CONNECTIONS / 9 (a turn's
    # first connection looks; on a loaded machine a stretched turn may look twice: fewer turns)
    assert made[-1] - made[0] <= CONNECTIONS // (per_turn + 1) + 4, per_turn_made
    assert max(backlog.looks) <= per_turn  # no look takes more than the pacer begins in a turn
    assert sum(backlog.looks) >= CONNECTIONS - (made[-1] - made[0]) - 1  # the rest: uvloop's own
    assert answered == CONNECTIONS  # each connection taken by the drain is served as any other


def test_an_unpaced_drain_takes_the_whole_queue_in_one_turn() -> None:
    made, answered = uvloop.run(_taken_at_turns(BacklogDrain(DRAIN_LIMIT)))
    assert made[-1] - made[0] <= 4  # the first connection made does not look; the next takes the rest
    assert answered == CONNECTIONS


def test_a_drain_takes_at_least_one_connection_a_turn() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BacklogDrain(0)


def test_after_the_server_closed_the_drain_takes_nothing() -> None:
    backlog = BacklogDrain()

    async def scenario() -> int:
        await _taken_at_turns(backlog)  # the server ran and closed its socket
        loop = asyncio.get_running_loop()
        backlog.drain(loop, asyncio.Protocol)
        return backlog.drain(loop, asyncio.Protocol)  # a crowd's second connection: it looks

    assert uvloop.run(scenario()) == 0


class _CountingListener:
    """A listening socket with nothing waiting, counting the ``accept()`` calls made on it."""

    def __init__(self) -> None:
        self.accepts = 0

    def accept(self) -> Any:
        self.accepts += 1
        raise BlockingIOError


def test_only_a_crowd_met_by_slow_turns_looks_for_others() -> None:
    backlog = BacklogDrain(8)
    listener = _CountingListener()
    backlog.listener = listener  # type: ignore[assignment]

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        backlog.drain(loop, asyncio.Protocol)
        assert listener.accepts == 0  # a lone connection: no system call for it
        await asyncio.sleep(CROWD_S * 1.5)
        backlog.drain(loop, asyncio.Protocol)
        assert listener.accepts == 0  # another, long after
        await asyncio.sleep(0)
        backlog.drain(loop, asyncio.Protocol)
        assert listener.accepts == 0  # the next turn, at once: one a turn keeps up
        await asyncio.sleep(SLOW_TURN_S * 2.5)
        backlog.drain(loop, asyncio.Protocol)
        assert listener.accepts == 1  # a turn several milliseconds on: one a turn is too few

    uvloop.run(scenario())


def test_a_host_name_is_left_to_uvicorn_an_address_is_bound_here() -> None:
    by_name = uvicorn.Config(_app, host="localhost", port=0)
    assert listening_socket(by_name) is None  # uvicorn binds each address the name has
    ipv6 = uvicorn.Config(_app, host="::1", port=0)
    assert listening_socket(ipv6) is None  # uvicorn's loop binds it IPv6-only
    by_address = uvicorn.Config(_app, host="127.0.0.1", port=0)
    listener = listening_socket(by_address)
    assert listener is not None
    try:
        assert listener.getsockname()[0] == "127.0.0.1"
    finally:
        listener.close()
