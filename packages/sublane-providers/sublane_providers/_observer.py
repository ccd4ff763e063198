"""The part of reading a stream that is the same for every provider: decode only what is wanted."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from sublane_core import json_loads, json_loads_text
from sublane_providers._types import StreamState


class JsonStreamObserver(ABC):
    """Base of the providers' stream observers: subclasses say which events they want decoded and
    what a decoded event tells; this class counts events and decodes JSON data only when wanted."""

    __slots__ = ("state",)

    def __init__(self, state: StreamState | None = None) -> None:
        self.state = state or StreamState()

    @abstractmethod
    def wants(self, name: str | None) -> bool:
        """Whether an event of this SSE name (``None``: unnamed) needs its data decoded."""

    @abstractmethod
    def observe_payload(self, payload: dict[str, Any]) -> None:
        """Record what an already decoded event tells (WebSocket frames arrive decoded)."""

    @abstractmethod
    def observe_answer(self, payload: dict[str, Any]) -> None:
        """Record what a whole JSON answer tells."""

    def observe(self, name: str | None, data: str | None) -> dict[str, Any] | None:
        """Record what one SSE event tells; returns the decoded payload when it was decoded."""
        self.state.events += 1
        if data is None or not self.wants(name):
            return None
        return self._decoded(data, json_loads)

    def observe_data(self, name: str | None, data: bytes | None) -> dict[str, Any] | None:
        """:meth:`observe` for data still in its UTF-8 bytes (``event_fields``): decoded straight
        from them, and only when wanted (issue #19)."""
        self.state.events += 1
        if data is None or not self.wants(name):
            return None
        return self._decoded(data, json_loads_text)

    def _decoded(self, data: Any, loads: Callable[[Any], Any]) -> dict[str, Any] | None:
        try:
            payload = loads(data)
        except ValueError:
            return None
        if not isinstance(payload, dict):
            return None
        self.observe_payload(payload)
        return payload
