"""A WebSocket refused before its upgrade (a bad key: HTTP 401) is not an error of the server's.

Uvicorn's ``websockets-sansio`` protocol (the one ``ws="auto"`` picks) writes the denial response
the route sends through the ASGI ``websocket.http.response`` extension, but never marks the
handshake done, so when the route returns it logs ``ERROR: ASGI callable returned without completing
handshake.`` for every refused key (uvicorn PR #3138, open). Anything alerting on ERROR lines would
fire on each wrong key a client tries.

The route marks its connection's task when its denial is on the wire (a context variable: uvicorn
runs the app in one task per connection and logs from it after the app returns), and a filter on
``uvicorn.error`` drops that one line from a marked task only. Every other line, and the same line
from a connection that was not denied, goes through.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Final

#: Uvicorn's words, as ``websockets_sansio_impl`` and ``wsproto_impl`` write them.
INCOMPLETE_HANDSHAKE: Final = "ASGI callable returned without completing handshake."

_denied: ContextVar[bool] = ContextVar("sublane_websocket_denied", default=False)


def mark_denied() -> None:
    """The current connection was refused with an HTTP response before its upgrade."""
    _denied.set(True)


class _DenialIsNoError(logging.Filter):
    """On ``uvicorn.error``: drops the incomplete-handshake line of a connection that was denied."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_denied.get() and record.msg == INCOMPLETE_HANDSHAKE)


_DENIAL_IS_NO_ERROR: Final = _DenialIsNoError()


def quiet_denials() -> None:
    """Install the filter (adding the same filter again changes nothing)."""
    logging.getLogger("uvicorn.error").addFilter(_DENIAL_IS_NO_ERROR)
