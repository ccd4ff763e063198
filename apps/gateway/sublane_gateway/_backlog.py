"""Taking connections waiting in the listening socket's queue when one per turn is too few (issue #49).

libuv, under uvloop, accepts one connection per listening socket per turn of the event loop (since
libuv 1.45, "unix: don't accept() connections in a loop", libuv/libuv#3696) and leaves the next one
to the next poll. A gateway whose turns are long — a burst of calls starting, each turn a few
milliseconds of starts and relays — then takes new connections at one per turn: of 500 clients that
connected together (all connected, in the kernel's queue, within 30–60 ms), the last were accepted
0.4–0.8 s later, and their wait counted in their time to first token (``bench/streams.py``).

:class:`BacklogDrain`: when a connection is made in a turn that came :data:`SLOW_TURN_S` or more
after the last turn that made one (turns that long take fewer than 500 connections a second one at
a time) and no more than :data:`CROWD_S` after it (a crowd, not a lone client), what else waits is
accepted with the listening socket's ``accept()`` — up to as many as the start pacer begins calls
in a turn (``SUBLANE_MODEL_STARTS_PER_TURN``) — and handed to the loop with
``loop.connect_accepted_socket`` (asyncio's public API for a socket accepted outside the loop), with
the protocol uvicorn would have built for it. At the pacer's rate accepting is never the narrower
door, and each turn's accepts stay a few.

Measured against the alternatives (``bench/streams.py``, alternated with uvloop's own accept):
taking the whole queue at once (asyncio's own loop takes up to its backlog per poll) made 100
clients connecting together wait for all of them to be accepted and parsed before the first call
began (+13 ms on the median first token), and so did a drain on every connection made, a few per
turn (+4.5 ms, nine runs): while the loop turns fast, one per turn takes a crowd in as fast as it is
served, each connection parsed and begun as soon as it is taken, where a drained batch waits for
its last member. A quiet gateway's queue is empty: it never looks (an ``accept()`` that finds
nothing costs ~5 µs).

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
import time
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
#: Turns this far apart take connections too slowly one at a time (500 a second).
SLOW_TURN_S = 0.002

_adopting: set[asyncio.Task[None]] = set()


class BacklogDrain:
    """Accepts what waits on :attr:`listener` (``None``: nothing to drain), up to ``per_turn``
    connections when a turn of the event loop that made a connection came too late for one per
    turn to keep up (the module's docstring), and hands them to the loop."""

    __slots__ = ("_last_made", "listener", "per_turn")

    def __init__(self, per_turn: int = DRAIN_LIMIT) -> None:
        if per_turn < 1:
            raise ValueError("per_turn must be at least 1")
        self.per_turn = per_turn
        self.listener: socket.socket | None = None
        self._last_made = float("-inf")

    def drain(self, loop: asyncio.AbstractEventLoop, make_protocol: Callable[[], asyncio.Protocol]) -> int:
        """Called when a connection is made: accept up to ``per_turn`` waiting connections when
        the last connection was made between :data:`SLOW_TURN_S` and :data:`CROWD_S` before this
        one (connections made in one turn are microseconds apart: the turn's first looks for the
        turn; a loaded machine that stretches a turn's callbacks that far apart makes it look
        twice); how many were taken."""
        listener = self.listener
        if listener is None:
            return 0
        now = time.monotonic()  # to the microsecond: uvloop's loop.time() is libuv's, in milliseconds
        gap = now - self._last_made
        self._last_made = now
        if not SLOW_TURN_S <= gap <= CROWD_S:  # a lone client, or a loop fast enough one at a time
            return 0
        taken = 0
        while taken < self.per_turn:
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
            taken += 1
            task = loop.create_task(_adopt(loop, make_protocol, connection))
            _adopting.add(task)
            task.add_done_callback(_adopting.discard)
        return taken


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
    can accept on it too, for an IPv4 address (the default ``127.0.0.1``, a container's
    ``0.0.0.0``); ``None`` — uvicorn binds and serves it without the drain — for a host name, which
    may name several addresses, and for an IPv6 address, which uvicorn's event loop binds IPv6-only
    where ``bind_socket`` would also take IPv4."""
    if config.uds is not None or config.fd is not None:
        return None
    try:
        address = ipaddress.ip_address(config.host)
    except ValueError:
        return None
    if address.version != 4:
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
