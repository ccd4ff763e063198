"""A Responses event stream read into the one response object a non-streaming caller wants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
_WANTED = _TERMINAL | {"response.output_item.done"}


class ResponsesCollector:
    """Feed decoded Responses events; :meth:`result` is the final ``response`` object.

    Some upstreams (Codex) leave ``output`` empty in the terminal event and send the items only as
    ``response.output_item.done`` events: the result back-fills ``output`` from those.
    """

    __slots__ = ("_final", "_items")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._final: dict[str, Any] | None = None

    def wants(self, name: str | None) -> bool:
        """Only the finished items and the terminal event matter: the deltas are not decoded."""
        return name is None or name in _WANTED

    def feed(self, payload: Mapping[str, Any]) -> None:
        kind = payload.get("type")
        if kind == "response.output_item.done":
            item = payload.get("item")
            if item is not None:
                self._items.append(item)
        elif kind in _TERMINAL:
            response = payload.get("response")
            self._final = dict(response) if isinstance(response, dict) else None

    def result(self) -> dict[str, Any] | None:
        """The final response, ``output`` back-filled; ``None`` when no terminal event came."""
        if self._final is None:
            return None
        final = dict(self._final)
        if not final.get("output"):
            final["output"] = list(self._items)
        return final
