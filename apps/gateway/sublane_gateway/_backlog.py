"""Taking every connection that waits in the listening socket's queue in one turn (issue #49).

libuv, under uvloop, accepts one connection per listening socket per turn of the event loop (since
libuv 1.45, "unix: don't accept() connections in a loop", libuv/libuv#3696) and leaves the next one
to the next poll. A gateway whose turns are long — a burst of calls starting, each turn a few
milliseconds of starts and relays — then takes new connections at one per turn: of 500 clients that
connected together (all connected, in the kernel's queue, within 30–60 ms), the last were accepted
0.4–0.8 s later, and their wait counted in their time to first token (``bench/streams.py``).

:class:`BacklogDrain` accepts them all, as asyncio's own event loop does (up to its backlog per
poll): whenever a connection is made, what else waits in the queue is accepted with the listening
socket's ``accept()`` and handed to the loop with ``loop.connect_accepted_socket`` (asyncio's public
API for a socket accepted outside the loop), with the protocol uvicorn would have built for it. In a
quiet gateway the queue is empty: one ``accept()`` that finds nothing per new connection (~2 µs).

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

#: The most connections one drain accepts (then the loop's next accept drains on).
DRAIN_LIMIT = 1024
#: uvicorn's exit status when its start-up failed (``uvicorn.run`` exits with it too).
STARTUP_FAILURE = 3

_adopting: set[asyncio.Task[None]] = set()


class BacklogDrain:
    """Accepts what waits on :attr:`listener` (``None``: nothing to drain) and hands it to the loop."""

    __slots__ = ("listener",)

    def __init__(self) -> None:
        self.listener: socket.socket | None = None

    def drain(self, loop: asyncio.AbstractEventLoop, make_protocol: Callable[[], asyncio.Protocol]) -> int:
        """Accept every waiting connection (at most :data:`DRAIN_LIMIT`); how many were taken."""
        listener = self.listener
        if listener is None:
            return 0
        taken = 0
        while taken < DRAIN_LIMIT:
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
