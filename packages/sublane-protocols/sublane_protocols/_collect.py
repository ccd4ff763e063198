"""Reading an upstream's event stream into the one JSON answer it stands for, by protocol.

Some upstreams only stream inferences (Codex); a client that asked for one JSON answer gets the
stream collected. Each protocol that needs it registers a collector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sublane_core import WireProtocol


class Collector(Protocol):
    """Fed decoded events; :meth:`result` is the whole answer, ``None`` when the stream never ended."""

    def wants(self, name: str | None) -> bool:
        """Whether an SSE event of this name (``None``: unnamed) must be decoded and fed."""
        ...

    def feed(self, payload: Mapping[str, Any]) -> None: ...

    def result(self) -> dict[str, Any] | None: ...


_COLLECTORS: dict[WireProtocol, Callable[[], Collector]] = {}


def register_collector(protocol: WireProtocol, factory: Callable[[], Collector]) -> None:
    _COLLECTORS[protocol] = factory


def new_collector(protocol: WireProtocol) -> Collector:
    """A collector for a stream of ``protocol``; ``LookupError`` when that protocol has none."""
    factory = _COLLECTORS.get(protocol)
    if factory is None:
        raise LookupError(f"no collector for {protocol} streams")
    return factory()
