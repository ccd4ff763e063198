"""A lean Redis client for the shared limits' scripts (issue #49): one connection per replica on
asyncio's public protocol API, every command of one event-loop turn sent in one write.

Measured (BENCHMARKS.md, "Issue #49"): one ``EVALSHA`` through redis-py's asyncio client costs
65–165 µs of the replica's CPU (hiredis, its C parser, and coredis change nothing for the better);
here 8–57 µs. What makes the difference is what is not done: no connection checked out of a pool
and back per command, no task or ``wait_for`` around a write, no command object and callback
table. Replies come back in the order the commands went out (Redis answers one connection in
order), so each is matched with the oldest waiting future; a caller that stops waiting (a
cancellation) leaves its future to be skipped when its reply comes. A script Redis does not know
(``NOSCRIPT``: a restart, ``SCRIPT FLUSH``) is sent again whole by the connection itself: a
give-back (a release, an unlock) whether or not its caller still waits, so that one sent by a
request whose client went away still happens; a take only for a caller still waiting.

The connection's settings come from the redis-py client the replica builds from
``SUBLANE_REDIS_URL`` (its pool's ``connection_kwargs``: host and port or a socket path, database,
user and password, TLS), so both speak to the same database. Pub/sub stays with redis-py.

A connection that fails or closes fails every command waiting on it (``LinkError``); the next
command connects again. A command unanswered for ``socket_timeout`` (5 s) closes the connection
the same way: a Redis that stopped answering is out of reach (SCALE-4).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import ssl
from collections.abc import Sequence
from typing import Any, Final, cast

from redis.asyncio import Redis, SSLConnection

#: An argument of a command: bytes as they are, anything else as its ``str``.
Arg = bytes | str | int | float

_CRLF: Final = b"\r\n"


class LinkError(Exception):
    """Redis is out of reach, or answered a command with an error."""


class ReplyError(LinkError):
    """Redis answered a command with an error (``-ERR …``, ``-NOSCRIPT …``)."""


class Script:
    """A Lua script, called by its SHA-1 (``EVALSHA``); sent whole once a Redis does not know it.

    ``gives_back``: the script lets go of what one holder took (a slot, a place, a lock), and only
    that holder's: sent whole even when its caller stopped waiting, since nothing else would let go
    in its stead, and harmless whenever it runs. Any other script is sent whole only for a caller
    still waiting: a take whose caller was cancelled has its give-back behind it, which has run
    by the time the take would (see :meth:`_Connection.call`)."""

    __slots__ = ("body", "gives_back", "sha")

    def __init__(self, body: str, *, gives_back: bool = False) -> None:
        self.body = body.encode()
        self.sha = hashlib.sha1(self.body, usedforsecurity=False).hexdigest().encode()
        self.gives_back = gives_back


#: A script call: the script, its keys and its arguments.
ScriptCall = tuple[Script, Sequence[str], Sequence[Arg]]


def command(parts: Sequence[Arg]) -> bytes:
    """One command in RESP: an array of bulk strings."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class _Incomplete(Exception):
    """The buffer ends inside a reply: wait for more bytes."""


def parse(buffer: bytes, at: int) -> tuple[Any, int]:
    """The reply starting at ``at`` and where the next one starts; raises :class:`_Incomplete`.
    Integers are ``int``, bulk and simple strings ``bytes``, arrays ``list``, nil ``None``, an
    error a :class:`ReplyError` (returned, not raised: it is one command's answer)."""
    end = buffer.find(_CRLF, at)
    if end < 0:
        raise _Incomplete
    kind = buffer[at]
    line = buffer[at + 1 : end]
    at = end + 2
    if kind == 58:  # ':' integer
        return int(line), at
    if kind == 36:  # '$' bulk string
        size = int(line)
        if size < 0:
            return None, at
        if len(buffer) < at + size + 2:
            raise _Incomplete
        return buffer[at : at + size], at + size + 2
    if kind == 42:  # '*' array
        size = int(line)
        if size < 0:
            return None, at
        items = []
        for _ in range(size):
            item, at = parse(buffer, at)
            items.append(item)
        return items, at
    if kind == 43:  # '+' simple string
        return line, at
    if kind == 45:  # '-' error
        return ReplyError(line.decode(errors="replace")), at
    raise LinkError(f"unexpected reply type {kind!r} from Redis")


class Counts:
    """What a link sent: commands, and the writes they went in (a write is one round trip)."""

    __slots__ = ("commands", "writes")

    def __init__(self) -> None:
        self.commands = 0
        self.writes = 0


class _Connection(asyncio.Protocol):
    """One connection: commands written once per loop turn, replies matched in order."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_s: float, counts: Counts) -> None:
        self._loop = loop
        self._counts = counts
        self._timeout_s = timeout_s
        self._transport: asyncio.Transport | None = None
        #: Each command sent and unanswered: its future, when it went, and for a script called by
        #: its SHA-1 the call itself, to be sent whole (``EVAL``) if Redis answers ``NOSCRIPT``.
        self._waiting: collections.deque[tuple[asyncio.Future[Any], float, ScriptCall | None]] = (
            collections.deque()
        )
        self._outgoing: list[bytes] = []
        self._buffer = b""
        self._watch: asyncio.TimerHandle | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio's interface without subclassing its classes
        self._transport = cast(asyncio.Transport, transport)

    def send(self, data: bytes) -> asyncio.Future[Any]:
        """Queue one command; its reply's future. Sent with the rest of this loop turn's."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue(future, data, None)
        return future

    def call(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> asyncio.Future[Any]:
        """Queue one script call by its SHA-1 (``EVALSHA``); its reply's future. Redis answering
        ``NOSCRIPT`` (a restart, ``SCRIPT FLUSH``) has it sent whole (``EVAL``) from here, so that a
        give-back is not lost with its cancelled caller. Sent whole, a call runs after the
        commands that went out behind its ``EVALSHA``: a take whose caller stopped waiting is
        therefore not sent again — its give-back may be one of those commands, and would have run
        first — and what it would have taken is never taken."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue(future, command([b"EVALSHA", script.sha, len(keys), *keys, *args]), (script, keys, args))
        return future

    def _queue(self, future: asyncio.Future[Any], data: bytes, call: ScriptCall | None) -> None:
        if self.closed:
            future.set_exception(LinkError("the connection to Redis is closed"))
            return
        if not self._outgoing:
            self._loop.call_soon(self._flush)
        self._outgoing.append(data)
        self._waiting.append((future, self._loop.time(), call))
        if self._watch is None:
            self._watch = self._loop.call_at(self._loop.time() + self._timeout_s, self._check)

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if self._transport is not None and not self.closed and outgoing:
            self._transport.write(b"".join(outgoing))
            counts = self._counts
            counts.writes += 1
            counts.commands += len(outgoing)

    def _check(self) -> None:
        """The oldest command unanswered for the timeout: Redis stopped answering."""
        self._watch = None
        if not self._waiting:
            return
        due = self._waiting[0][1] + self._timeout_s
        if self._loop.time() >= due:
            self.close(LinkError("Redis did not answer in time"))
        else:
            self._watch = self._loop.call_at(due, self._check)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer + data if self._buffer else data
        at = 0
        waiting = self._waiting
        try:
            while at < len(buffer):
                reply, at = parse(buffer, at)
                if not waiting:
                    raise LinkError("a reply from Redis that no command asked for")
                future, _, call = waiting.popleft()
                if isinstance(reply, ReplyError):
                    if call is not None and str(reply).startswith("NOSCRIPT"):
                        script, keys, args = call
                        if script.gives_back or not future.done():
                            whole = command([b"EVAL", script.body, len(keys), *keys, *args])
                            self._queue(future, whole, None)
                    elif not future.done():
                        future.set_exception(reply)
                elif not future.done():
                    future.set_result(reply)
        except _Incomplete:
            pass
        except (LinkError, ValueError) as error:
            self.close(LinkError(f"unreadable reply from Redis: {error}"))
            return
        self._buffer = buffer[at:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.close(LinkError("the connection to Redis was lost"))

    def close(self, error: LinkError) -> None:
        """Fail every waiting command with ``error`` and drop the connection."""
        self.closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        while self._waiting:
            future, _, _ = self._waiting.popleft()
            if not future.done():
                future.set_exception(error)
                future.exception()  # a caller that stopped waiting must not leave it unretrieved
        self._outgoing.clear()
        if self._transport is not None:
            self._transport.abort()


class ScriptLink:
    """The replica's lean connection to Redis for scripts and plain commands (not pub/sub)."""

    def __init__(self, redis: Redis) -> None:
        settings = dict(redis.connection_pool.connection_kwargs)
        self._path: str | None = settings.get("path")
        self._host = str(settings.get("host", "localhost"))
        self._port = int(settings.get("port", 6379))
        self._tls = _tls_context(settings) if "ssl_cert_reqs" in settings or _is_tls(redis) else None
        self._connect_timeout_s = float(settings.get("socket_connect_timeout") or 5.0)
        self._timeout_s = float(settings.get("socket_timeout") or 5.0)
        self._hello: list[bytes] = []
        if settings.get("password"):
            user = settings.get("username")
            auth = [b"AUTH", *([user] if user else []), settings["password"]]
            self._hello.append(command(auth))
        if int(settings.get("db") or 0):
            self._hello.append(command([b"SELECT", int(settings["db"])]))
        #: Commands sent and the writes that carried them, over every connection so far.
        self.counts = Counts()
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None
        self._closed = False

    async def _connected(self) -> _Connection:
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        if self._closed:
            raise LinkError("the link to Redis is closed")
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._connect())
            # retrieved here too: every caller may have stopped waiting before it ends
            self._connecting.add_done_callback(lambda done: done.cancelled() or done.exception())
        connecting = self._connecting
        try:
            return await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()

        def made() -> _Connection:
            return _Connection(loop, self._timeout_s, self.counts)

        connection: _Connection | None = None

        try:
            async with asyncio.timeout(self._connect_timeout_s):
                if self._path is not None:
                    _, connection = await loop.create_unix_connection(made, self._path)
                else:
                    _, connection = await loop.create_connection(made, self._host, self._port, ssl=self._tls)
                for reply in [connection.send(hello) for hello in self._hello]:
                    await reply
        except (OSError, TimeoutError, LinkError) as error:  # ssl.SSLError is an OSError
            if connection is not None:
                connection.close(LinkError("the connection to Redis was not set up"))
            raise LinkError(f"could not connect to Redis: {error}") from None
        self._connection = connection
        return connection

    async def execute(self, *parts: Arg) -> Any:
        """One command's reply (``GET``, ``PING``)."""
        connection = await self._connected()
        return await connection.send(command(parts))

    async def run(self, script: Script, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """``script``'s reply, by ``EVALSHA`` (``EVAL`` once if Redis does not know it)."""
        connection = await self._connected()
        return await connection.call(script, keys, args)

    async def run_all(self, calls: Sequence[tuple[Script, Sequence[str], Sequence[Arg]]]) -> list[Any]:
        """Several scripts' replies, sent together (one write, one round trip)."""
        connection = await self._connected()
        futures = [connection.call(script, keys, args) for script, keys, args in calls]
        replies: list[Any] = []
        failure: LinkError | None = None
        try:
            for future in futures:
                try:
                    replies.append(await future)
                except LinkError as error:
                    failure = failure or error
                    replies.append(None)
        except asyncio.CancelledError:
            for future in futures:  # nobody waits for any of them now (Script.gives_back)
                future.cancel()
            raise
        if failure is not None:
            raise failure
        return replies

    async def aclose(self) -> None:
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close(LinkError("the link to Redis is closed"))


def _is_tls(redis: Redis) -> bool:
    return issubclass(redis.connection_pool.connection_class, SSLConnection)


def _tls_context(settings: dict[str, Any]) -> ssl.SSLContext:
    """TLS as redis-py's ``rediss://`` settings ask (``ssl_cert_reqs``, ``ssl_ca_certs``, …)."""
    context = ssl.create_default_context(
        cafile=settings.get("ssl_ca_certs"), capath=settings.get("ssl_ca_path")
    )
    required = settings.get("ssl_cert_reqs", "required")
    if required in ("none", ssl.CERT_NONE):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif required in ("optional", ssl.CERT_OPTIONAL):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_OPTIONAL
    else:
        context.check_hostname = bool(settings.get("ssl_check_hostname", True))
    if settings.get("ssl_certfile"):
        context.load_cert_chain(
            settings["ssl_certfile"], settings.get("ssl_keyfile"), settings.get("ssl_password")
        )
    return context
