"""Taking every connection that waits in the listening socket's queue in one turn (issue #49).

libuv, under uvloop, accepts one connection per listening socket per turn of the event loop (since
libuv 1.45, "unix: don't accept() connections in a loop", libuv/libuv#3696) and leaves the next one
to the next poll. A gateway whose turns are long — a burst of calls starting, each turn a few
milliseconds of starts and relays — then takes new connections at one per turn: of 500 clients that
connected together (all connected, in the kernel's queue, within 30–60 ms), the last were accepted
0.4–0.8 s later, and their wait counted in their time to first token (``bench/streams.py``).

:class:`BacklogDrain` takes them a few per turn, as many as the start pacer begins calls in a turn
(``SUBLANE_MODEL_STARTS_PER_TURN``): whenever a connection is made, what else waits in the queue is
accepted with the listening socket's ``accept()``, up to the turn's budget, and handed to the loop
with ``loop.connect_accepted_socket`` (asyncio's public API for a socket accepted outside the loop),
with the protocol uvicorn would have built for it. Taking the whole queue at once (asyncio's own
loop takes up to its backlog per poll) was measured too: 100 clients connecting together then
waited for all 100 to be accepted and parsed before the first call began (+10–15 ms on the median
stream's first token); one per turn is what starves a busy gateway. At the pacer's rate accepting
is never the narrower door, and each turn's accepts stay a few. Only a connection made within
:data:`CROWD_S` of the one before looks for others: a quiet gateway's queue is empty, and an
``accept()`` that finds nothing costs ~5 µs.

The socket is uvicorn's own (``uvicorn.Config.bind_socket``, as its multi-process mode binds one),
given to ``uvicorn.Server.run(sockets=...)``; uvloop closes it at shutdown, and the drain stops there.
``SUBLANE_WORKERS`` processes (SCALE-7) are started by uvicorn's supervisor, which hands each its
copy of the socket out of our reach: there each worker takes one connection per turn, as before.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

_log = logging.getLogger("sublane.serve")

#: The most connections taken in one turn when no start pacer sets the number (asyncio's own loop
#: takes up to its backlog, 100 by default, per poll).
DRAIN_LIMIT = 100
#: uvicorn's exit status when its start-up failed (``uvicorn.run`` exits with it too).
STARTUP_FAILURE = 3

#: A connection made this soon after the one before may have others waiting behind it.
CROWD_S = 0.1

_adopting: set[asyncio.Task[None]] = set()


class BacklogDrain:
    """Accepts what waits on :attr:`listener` (``None``: nothing to drain), at most ``per_turn``
    connections per turn of the event loop, and hands them to the loop."""

    __slots__ = ("_armed", "_last_made", "_left", "listener", "per_turn")

    def __init__(self, per_turn: int = DRAIN_LIMIT) -> None:
        if per_turn < 1:
            raise ValueError("per_turn must be at least 1")
        self.per_turn = per_turn
        self.listener: socket.socket | None = None
        self._left = per_turn
        # The loop whose next turn gives the budget back (``None``: no turn armed), per loop as the
        # start pacer keeps it: a test's loop closed with a turn armed must not starve the next.
        self._armed: asyncio.AbstractEventLoop | None = None
        self._last_made = float("-inf")

    def drain(self, loop: asyncio.AbstractEventLoop, make_protocol: Callable[[], asyncio.Protocol]) -> int:
        """Accept waiting connections, as many as this turn has left; how many were taken. Called
        when a connection is made; it looks only if the one before was made within :data:`CROWD_S`."""
        listener = self.listener
        if listener is None:
            return 0
        now = loop.time()
        last, self._last_made = self._last_made, now
        if now - last > CROWD_S:
            return 0
        if self._armed is not loop:
            self._armed = loop
            self._left = self.per_turn
            loop.call_soon(self._next_turn)
        taken = 0
        while self._left:
            try:
                connection, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                break  # nothing waits
            except ConnectionAbortedError:
                continue  # reset by its client before it was taken
            except OSError as exc:
                # EMFILE/ENFILE: the loop's own accept sheds the load; EBADF: the server closed.
                if exc.errno not in (errno.EBADF, errno.EMFILE, errno.ENFILE):
                    _log.warning("accepting a waiting connection failed: %s", exc)
                break
            self._left -= 1
            taken += 1
            task = loop.create_task(_adopt(loop, make_protocol, connection))
            _adopting.add(task)
            task.add_done_callback(_adopting.discard)
        return taken

    def _next_turn(self) -> None:
        self._armed = None
        self._left = self.per_turn


async def _adopt(
    loop: asyncio.AbstractEventLoop, make_protocol: Callable[[], asyncio.Protocol], connection: socket.socket
) -> None:
    try:
        await loop.connect_accepted_socket(make_protocol, connection)
    except Exception as exc:  # a socket its client closed meanwhile, a loop shutting down
        _log.debug("a waiting connection could not be served: %s", type(exc).__name__)
        connection.close()


def listening_socket(config: uvicorn.Config) -> socket.socket | None:
    """The socket uvicorn would listen on, bound here (``Config.bind_socket``) so that the drain
    can accept on it too; ``None`` for a host name, which may name several addresses (uvicorn then
    binds each, and serves them without the drain)."""
    if config.uds is not None or config.fd is not None:
        return None
    try:
        ipaddress.ip_address(config.host)
    except ValueError:
        return None
    return config.bind_socket()


def serve(config: uvicorn.Config, backlog: BacklogDrain) -> None:
    """Run uvicorn's server on ``config`` (as ``uvicorn.run`` does), ``backlog`` draining its socket."""
    import uvicorn

    server = uvicorn.Server(config)
    listener = listening_socket(config)
    if listener is None:
        server.run()
    else:
        backlog.listener = listener
        server.run(sockets=[listener])
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)
