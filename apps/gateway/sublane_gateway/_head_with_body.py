"""A response's status line and headers leave in the same write as its first body bytes.

Uvicorn writes the head of a response when the app sends ``http.response.start`` and the body when
it sends ``http.response.body``; uvloop writes each at once, so a JSON answer took two system calls
and two TCP segments, and the client woke twice (issue #19, seen with strace). This transport
wrapper, given to each request's response cycle, holds the cycle's first write (its head, or a
``100 Continue``) until the next write joins it, and writes it alone at the event loop's next turn
at the latest — a stream's head is never held back waiting for the upstream.
"""

from __future__ import annotations

import asyncio
from typing import Any


class HeadWithBody:
    """Wraps a connection's transport for one response: what uvicorn's response cycle calls
    (``write``, ``is_closing``, ``close``; ``get_extra_info`` too) and nothing else.

    No ``__getattr__`` pass-through: a class that has one pays Python's slow attribute path on
    every attribute read, hits included, and each miss raises and catches an ``AttributeError``
    (callgrind: ~3 % of a call's instructions, issue #19)."""

    __slots__ = ("_held", "_loop", "_started", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._started = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self.transport.writelines((held, data))  # one writev: the body is not copied
        elif self._started:
            self.transport.write(data)
        else:
            self._started = True
            self._held = bytes(data)
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what is held, if anything (the next turn of the loop, or before closing)."""
        held = self._held
        if held is not None:
            self._held = None
            if not self.transport.is_closing():
                self.transport.write(held)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)
