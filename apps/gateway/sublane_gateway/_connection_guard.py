"""OPS-4 against slow clients, around uvicorn's own HTTP protocol: a client has
``SUBLANE_CLIENT_HEADER_TIMEOUT_S`` to send a request's headers, and ``SUBLANE_BODY_TIMEOUT_S``
from their end to send its body.

Uvicorn bounds idle keep-alive connections (``timeout_keep_alive``: ``SUBLANE_KEEP_ALIVE_TIMEOUT_S``)
but has no option for a header trickled one byte at a time, which keeps cancelling that timer, so
one socket could be held for ever. Uvicorn's ``http`` option takes a protocol class; the one given
here, :func:`guarded_http`, is an :class:`asyncio.Protocol` of ours that *holds* the protocol
uvicorn's documented ``http="httptools"`` names (built as uvicorn builds any protocol class it is
given) and talks to it only through asyncio's public protocol and transport interfaces:

- every received byte goes to uvicorn's protocol unchanged, after our own
  ``httptools.HttpRequestParser`` (httptools' public API) has seen it, to learn when a request's
  head begins and ends: a connection whose request head is not complete within the timeout,
  counted from the connection's opening or the request's first byte, is closed — unless it is
  still answering an earlier request (a pipelined head behind a running stream); a request whose
  body (shorter than its ``Content-Length``, or chunked and never ended) is not complete within the
  body timeout is answered ``408 body_timeout`` in its route's error shape (unless its answer has
  begun) and its connection closed. Both deadlines are one :class:`MovingDeadline` per connection
  (a request is in one phase at a time), moved on with an attribute store, no timer per request;
- uvicorn's protocol writes to a :class:`ConnectionWrites` transport of ours, which sends a
  response's head in the same write as its first body bytes (one system call and one TCP
  segment for a JSON answer, issue #19) and hands every other call to the real transport;
- with a :class:`~sublane_gateway._backlog.BacklogDrain` (``sublane serve``'s), a connection made
  while the loop turns too slowly for uvloop's one accept per turn takes a few others waiting in
  the listening socket's queue, each served by a protocol made as uvicorn made this one (issue #49);
- what the same parser refuses is answered in the route's error shape before uvicorn's protocol
  sees it (OPS-1, :mod:`sublane_gateway._framing`): a head past 64 KiB (``431``), a request that is
  not well-formed HTTP/1.1 (``400 malformed_http``, where uvicorn answers plain text), and a
  WebSocket upgrade websockets could not read (``431``, where uvicorn's WebSocket protocol answers
  nothing and leaves the connection open).

Nothing of uvicorn is subclassed, patched or read beyond its documented configuration; the
protocol's constructor arguments are the ones uvicorn passes to any class given as ``http``.
The cost (a second parse of each request head, ~1 µs) is in BENCHMARKS.md.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any, cast

import httptools
from uvicorn.config import HTTP_PROTOCOLS

from sublane_core import MovingDeadline
from sublane_gateway._backlog import BacklogDrain
from sublane_gateway._framing import (
    MAX_HEAD_BYTES,
    WEBSOCKET_MAX_HEADERS,
    WEBSOCKET_MAX_LINE,
    body_timeout_answer,
    closing_answer,
    request_target,
    websocket_head_fits,
)


def _uvicorn_protocol(name: str) -> type[asyncio.Protocol]:
    """The protocol class uvicorn's documented ``http=<name>`` option stands for."""
    module, _, attribute = HTTP_PROTOCOLS[name].partition(":")
    protocol: type[asyncio.Protocol] = getattr(importlib.import_module(module), attribute)
    return protocol


class ConnectionWrites(asyncio.Transport):
    """The transport uvicorn's protocol writes to: the real one, with a response's head held back
    until its first body bytes join it (or the event loop's next turn: a stream's head is never
    held waiting for the upstream). Every other call goes straight to the real transport."""

    __slots__ = ("_armed", "_held", "_loop", "transport", "wrote")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self.transport = transport
        self._loop = loop
        self._armed = False  # the next write is a response's head
        self._held: bytes | None = None
        self.wrote = False  # something was written since the header deadline last looked

    def hold_next(self) -> None:
        """A request's head is complete: the next write is its response's head (or a 100)."""
        self._armed = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.wrote = True
        held = self._held
        if held is not None:
            self._held = None
            self.transport.writelines((held, data))  # one writev: the body is not copied
        elif self._armed:
            self._armed = False
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self.transport.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self.flush()
        self.wrote = True
        self.transport.writelines(list_of_data)

    def flush(self) -> None:
        """Write what is held, if anything (the loop's next turn, or before anything else)."""
        held = self._held
        if held is not None:
            self._held = None
            if not self.transport.is_closing():
                self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self._held = None
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.transport.set_protocol(protocol)  # a WebSocket upgrade: the socket is theirs now

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.transport.get_protocol()

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        self.transport.resume_reading()

    def is_reading(self) -> bool:
        return self.transport.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size() + len(self._held or b"")

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self.transport.get_write_buffer_limits()

    def can_write_eof(self) -> bool:
        return self.transport.can_write_eof()

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def answer_and_close(self, answer: bytes) -> None:
        """Send ``answer`` (a whole response of ours) and close; what uvicorn's protocol writes
        afterwards goes nowhere."""
        transport = self.transport
        self._held, self._armed = None, False
        transport.write(answer)
        transport.close()
        self.transport = _Closed(transport)


class _Closed(asyncio.Transport):
    """A connection closed under uvicorn's protocol: writes and flow control are no-ops."""

    def __init__(self, closed: asyncio.Transport) -> None:
        super().__init__()
        self._closed = closed

    def write(self, data: bytes | bytearray | memoryview) -> None:
        pass

    def writelines(self, list_of_data: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        self._closed.abort()

    def is_closing(self) -> bool:
        return True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._closed.get_extra_info(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


class GuardedHttp(asyncio.Protocol):
    """Uvicorn's HTTP protocol for one connection, behind the header and body deadlines (see the module)."""

    header_timeout_s = 10.0
    body_timeout_s = 30.0
    served_by: type[asyncio.Protocol] = _uvicorn_protocol("httptools")
    #: What else waits to be accepted is taken when a connection is made (``None``: left to the loop).
    backlog: BacklogDrain | None = None

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._loop = _loop or asyncio.get_event_loop()
        self._made_with = (config, server_state, app_state)
        self._inner = self.served_by(  # type: ignore[call-arg]
            config=config, server_state=server_state, app_state=app_state, _loop=_loop
        )
        parser = httptools.HttpRequestParser(self)
        parser.set_dangerous_leniencies(lenient_data_after_close=True)  # as uvicorn's own parser
        self._parser: httptools.HttpRequestParser | None = parser
        self._due = MovingDeadline(self._loop, self._too_slow)  # the head's, then the body's
        self._in_body = False  # which of the two ``_due`` holds
        self._head_bytes = 0  # received while the request's head is not complete
        self._head_reads: list[bytes] = []  # the reads of a head not complete yet
        self._url = b""
        self._completed = 0  # requests read whole on this connection
        self._writes: ConnectionWrites | None = None

    @property
    def watching_headers(self) -> bool:
        """Whether a header deadline is pending (none once the connection is a WebSocket's)."""
        return self._due.armed

    # -- the asyncio protocol, passed on ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not registered as asyncio.Transport subclasses; they have its methods
        self._writes = ConnectionWrites(cast(asyncio.Transport, transport), self._loop)
        self._due.set_in(self.header_timeout_s)
        self._inner.connection_made(self._writes)
        backlog = self.backlog
        if backlog is not None:
            backlog.drain(self._loop, self._sibling)

    def _sibling(self) -> GuardedHttp:
        """The protocol for another connection of the same server, made as uvicorn makes ours."""
        config, server_state, app_state = self._made_with
        return type(self)(config, server_state, app_state, self._loop)

    def data_received(self, data: bytes) -> None:
        parser = self._parser
        if parser is not None:
            in_head, completed = not self._in_body, self._completed
            try:
                parser.feed_data(data)
            except httptools.HttpParserUpgrade:  # a WebSocket: the rest is not HTTP
                self._stop_watching()
                if not websocket_head_fits(b"".join(self._head_reads) + data):
                    self._refuse_head(
                        f"A WebSocket upgrade's header lines may hold {WEBSOCKET_MAX_LINE} bytes each, "
                        f"and {WEBSOCKET_MAX_HEADERS} headers at most."
                    )
                    return
            except httptools.HttpParserError as error:
                self._parser = None
                if self._completed == completed and self._refuse_malformed(data, str(error)):
                    return
                # else uvicorn's protocol answers its plain 400 and closes; the deadline stays
            if (in_head or not self._in_body) and self._parser is not None and self._head_too_large(data):
                self._refuse_head()
                return
        self._inner.data_received(data)

    def _head_too_large(self, data: bytes) -> bool:
        """Count what of ``data`` belongs to a request head: all of it while the head goes on, up to
        its blank line when the head ended in it (one search, once per request). The blank line may
        have begun in the read before (a head's reads are kept): a body after it is never counted."""
        if self._in_body:
            reads = self._head_reads
            tail = reads[-1][-3:] if reads else b""
            end = (tail + data).find(b"\r\n\r\n") if tail else data.find(b"\r\n\r\n")
            if end != -1:  # else a head ended by bare line feeds: its bytes were counted before
                self._head_bytes += end + 4 - len(tail)
        else:
            self._head_bytes += len(data)
            self._head_reads.append(data)
        return self._head_bytes > MAX_HEAD_BYTES

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    # -- httptools parser callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._in_body, self._url, self._head_bytes = False, b"", 0
        if self._head_reads:
            self._head_reads = []
        if self._due.at is None:  # counted from the connection's opening for the first
            self._due.set_in(self.header_timeout_s)
            if self._writes is not None:
                self._writes.wrote = False  # from here on, a write is an earlier request's answer

    def on_url(self, url: bytes) -> None:
        self._url += url  # the route's error shape, should its body be late

    def on_headers_complete(self) -> None:
        self._in_body = True
        self._due.set_in(self.body_timeout_s)  # later than the head's: an attribute store
        writes = self._writes
        if writes is not None:
            writes.wrote = False  # from here on, a write is this request's answer
            writes.hold_next()

    def on_message_complete(self) -> None:
        self._due.at = None
        self._completed += 1

    # -- the deadline ------------------------------------------------------------------------------

    def _too_slow(self) -> None:
        writes = self._writes
        if writes is None or writes.is_closing():
            return
        if self._in_body:  # OPS-4: the body did not arrive within its time
            if writes.wrote:  # its answer has begun (refused before the body was read): just close
                writes.close()
            else:
                writes.answer_and_close(body_timeout_answer(self._url))
            return
        if writes.wrote:  # still answering an earlier request: look again one timeout later
            writes.wrote = False
            self._due.set_in(self.header_timeout_s)
            return
        writes.close()

    def _refuse_head(self, message: str | None = None) -> None:
        """OPS-1: a head past :data:`MAX_HEAD_BYTES` is not read on (uvicorn never sees the rest);
        with ``message``, an upgrade head websockets cannot read, which would get no answer at all
        (uvicorn's WebSocket protocol leaves the connection open for as long as the client waits)."""
        self._stop_watching()
        writes = self._writes
        if writes is not None and not writes.is_closing():
            writes.answer_and_close(closing_answer(self._url, "headers_too_large", message))

    def _refuse_malformed(self, data: bytes, reason: str) -> bool:
        """OPS-1: a request that is not well-formed HTTP/1.1 (a byte its request line, a header or a
        chunked body may not hold; ``Content-Length`` with ``Transfer-Encoding``) is answered ``400
        malformed_http`` in its route's shape, where uvicorn would answer plain text. Not where a
        whole request came before it in the same read (uvicorn's protocol must serve that one
        first) or where this request's answer has begun: then uvicorn's protocol ends it as before."""
        writes = self._writes
        if writes is None or writes.is_closing() or (self._in_body and writes.wrote):
            return False
        self._stop_watching()
        message = f"The request is not well-formed HTTP/1.1: {reason}."
        url = self._url or request_target(data)  # on_message_begin emptied the last request's
        writes.answer_and_close(closing_answer(url, "malformed_http", message))
        return True

    def _stop_watching(self) -> None:
        self._parser = None
        self._due.close()


def guarded_http(
    header_timeout_s: float, body_timeout_s: float = 30.0, backlog: BacklogDrain | None = None
) -> type[GuardedHttp]:
    """The protocol class for uvicorn's ``http`` option, closing connections whose request head
    takes longer than ``header_timeout_s``, or whose body takes longer than ``body_timeout_s``
    after its head; with ``backlog``, a connection made may take others waiting (the drain decides)."""
    attributes = {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s, "backlog": backlog}
    return type("GuardedHttp", (GuardedHttp,), attributes)
