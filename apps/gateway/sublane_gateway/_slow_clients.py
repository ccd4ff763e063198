"""OPS-4: a client has ``SUBLANE_CLIENT_HEADER_TIMEOUT_S`` to send a request's headers.

Uvicorn bounds idle keep-alive connections (``SUBLANE_KEEP_ALIVE_TIMEOUT_S``), but a header
trickled one byte at a time keeps cancelling that timer, so one socket could be held for ever. This
protocol (uvicorn's httptools protocol plus a header timer) closes a connection whose request
headers are not complete in time, counted from the connection's opening or the request's first
byte. Each request's response goes out through
:class:`~sublane_gateway._head_with_body.HeadWithBody` (head and body in one write).

Both timeouts are the connection's, each a :class:`~sublane_core.MovingDeadline` on one timer:
uvicorn makes and cancels a keep-alive timer per request, and a timer made and cancelled costs
~3–4 µs on uvloop (issue #19, BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sublane_core import MovingDeadline
from sublane_gateway._head_with_body import HeadWithBody


def header_bounded_protocol(header_timeout_s: float) -> type[HttpToolsProtocol]:
    """An httptools protocol class that closes connections slower than ``header_timeout_s``."""

    class HeaderBoundedProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # When the headers being received must be complete (None between requests), and when
            # an idle kept-alive connection ends (None while serving): one timer each per
            # connection, not one made and cancelled per request (~3 µs each).
            self._headers_due = MovingDeadline(self.loop, self._headers_too_slow)
            self._idle_until = MovingDeadline(self.loop, self._idle_too_long)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._headers_due.set_in(header_timeout_s)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._headers_due.at is None:  # counted from the connection's opening for its first
                self._headers_due.set_in(header_timeout_s)

        def on_headers_complete(self) -> None:
            self._headers_due.at = None
            before = self.cycle
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None and cycle is not before:  # a new request (not an upgrade)
                cycle.transport = HeadWithBody(self.transport, self.loop)  # type: ignore[assignment]

        def connection_lost(self, exc: Exception | None) -> None:
            self._close_deadlines()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self) -> None:
            self._close_deadlines()  # the connection is the WebSocket protocol's from here on
            super().handle_websocket_upgrade()

        def _close_deadlines(self) -> None:
            self._headers_due.close()
            self._idle_until.close()

        def _headers_too_slow(self) -> None:
            if self.cycle is None or self.cycle.response_complete:  # not inside a running request
                self.transport.close()

        # -- keep-alive: uvicorn arms a timer after every response and cancels it on the next
        # request's first bytes; here the connection's one deadline moves instead.

        def _unset_keepalive_if_required(self) -> None:
            self._idle_until.at = None  # bytes came, or a response completed: not idle

        def on_response_complete(self) -> None:
            """uvicorn's, but for the keep-alive timer (uvicorn 0.54: the version constraints.txt
            pins; ``test_ops_4_keep_alive_*`` in tests/test_cli.py check the behaviour)."""
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return
            self._idle_until.at = None
            self.flow.resume_reading()
            if self.pipeline:  # the next pipelined request
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)
                return
            self._idle_until.set_in(self.timeout_keep_alive)

        def _idle_too_long(self) -> None:
            if not self.transport.is_closing():
                self.transport.close()

    return HeaderBoundedProtocol
