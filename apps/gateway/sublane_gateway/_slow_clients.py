"""OPS-4: a client has ``SUBLANE_CLIENT_HEADER_TIMEOUT_S`` to send a request's headers.

Uvicorn bounds idle keep-alive connections (``SUBLANE_KEEP_ALIVE_TIMEOUT_S``), but a header
trickled one byte at a time keeps cancelling that timer, so one socket could be held for ever. This
protocol (uvicorn's httptools protocol plus a header timer) closes a connection whose request
headers are not complete in time, counted from the connection's opening or the request's first
byte. Each request's response goes out through
:class:`~sublane_gateway._head_with_body.HeadWithBody` (head and body in one write).

Both timers are the connection's, armed once and re-armed by themselves when they fire early (the
connection was used since): uvicorn makes and cancels a keep-alive timer per request, and a timer
made and cancelled costs ~3–4 µs on uvloop, more than a tenth of what a call's own bookkeeping
costs (issue #19, BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
from asyncio import TimerHandle
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sublane_gateway._head_with_body import HeadWithBody

_TIMER_SLACK_S = 0.001  # a timer may fire this much before its time (the loop's clock in ms)


def header_bounded_protocol(header_timeout_s: float) -> type[HttpToolsProtocol]:
    """An httptools protocol class that closes connections slower than ``header_timeout_s``."""

    class HeaderBoundedProtocol(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # When the headers being received must be complete (loop time); None between requests.
            # One timer per connection, armed once and re-armed by itself while requests keep
            # completing their headers in time: a timer made and cancelled per request cost ~3 µs.
            self._headers_due: float | None = None
            self._header_timer: TimerHandle | None = None
            # The keep-alive timeout, the same way: idle since (loop time), None while serving.
            self._idle_since: float | None = None
            self._keep_alive_timer: TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._expect_headers()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._headers_due is None:  # counted from the connection's opening for its first
                self._expect_headers()

        def on_headers_complete(self) -> None:
            self._headers_due = None
            before = self.cycle
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None and cycle is not before:  # a new request (not an upgrade)
                cycle.transport = HeadWithBody(self.transport, self.loop)  # type: ignore[assignment]

        def connection_lost(self, exc: Exception | None) -> None:
            self._headers_due = self._idle_since = None
            for timer in (self._header_timer, self._keep_alive_timer):
                if timer is not None:
                    timer.cancel()
            self._header_timer = self._keep_alive_timer = None
            super().connection_lost(exc)

        # -- keep-alive: uvicorn arms a timer after every response and cancels it on the next
        # request's first bytes; here one timer per connection re-arms itself instead.

        def _unset_keepalive_if_required(self) -> None:
            self._idle_since = None  # bytes came, or a response completed: not idle

        def on_response_complete(self) -> None:
            """uvicorn's, but for the keep-alive timer (uvicorn 0.54: the version constraints.txt
            pins; ``test_keep_alive_*`` in tests/test_cli.py check the behaviour)."""
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return
            self._idle_since = None
            self.flow.resume_reading()
            if self.pipeline:  # the next pipelined request
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)
                return
            self._idle_since = self.loop.time()
            if self._keep_alive_timer is None:
                self._keep_alive_timer = self.loop.call_later(
                    self.timeout_keep_alive, self._keep_alive_expired
                )

        def _keep_alive_expired(self) -> None:
            self._keep_alive_timer = None
            since = self._idle_since
            if since is None:
                return  # serving: the response's end arms the timer again
            remaining = since + self.timeout_keep_alive - self.loop.time()
            if remaining > _TIMER_SLACK_S:  # served again since the timer was armed
                self._keep_alive_timer = self.loop.call_later(remaining, self._keep_alive_expired)
                return
            if not self.transport.is_closing():
                self.transport.close()

        def _expect_headers(self) -> None:
            self._headers_due = due = self.loop.time() + header_timeout_s
            if self._header_timer is None:
                self._header_timer = self.loop.call_at(due, self._expired)

        def _expired(self) -> None:
            self._header_timer = None
            due = self._headers_due
            if due is None:
                return  # no headers awaited: the next request arms the timer again
            if self.loop.time() + _TIMER_SLACK_S < due:  # a later request's headers: wait for those
                self._header_timer = self.loop.call_at(due, self._expired)
                return
            if self.cycle is None or self.cycle.response_complete:  # not inside a running request
                self.transport.close()

    return HeaderBoundedProtocol
