"""What a translator between a client protocol and an upstream protocol is (the registry of the
matrix's cells is in ``_hub.py``).

A call whose client protocol equals its upstream's passes through untouched (no translator).
A translator is pure: :meth:`Translator.request` turns the client's body into the upstream's,
:meth:`Translator.answer` an upstream JSON answer into the client's, and
:meth:`Translator.new_stream` gives an incremental translator that is fed decoded upstream events
and returns the client's frames as bytes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from sublane_core import WireProtocol


class TranslationRefused(ValueError):
    """The client's body cannot be served by the upstream protocol (400 in the client's shape)."""

    def __init__(self, message: str, *, code: str = "invalid_request", param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.param = param


class StreamTranslator(Protocol):
    """Turns decoded upstream events into the client's frames."""

    @property
    def finished(self) -> bool:
        """Whether the client has seen its terminal frame."""
        ...

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        """The client frames for one upstream event (may be empty)."""
        ...

    def trailer(self, error_code: str | None) -> bytes:
        """The frames after the upstream stream ended (an error frame when it ended early)."""
        ...


class Translator(ABC):
    """One (client protocol, upstream protocol) pair."""

    client: ClassVar[WireProtocol]
    upstream: ClassVar[WireProtocol]

    @abstractmethod
    def request(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The upstream body for the client's body; raises :class:`TranslationRefused`."""

    @abstractmethod
    def new_stream(
        self, body: Mapping[str, Any], *, model: str, created: int, json_array: bool = False
    ) -> StreamTranslator:
        """A stream translator for one call (``body`` is the client's, for its stream options;
        ``json_array``: a Gemini client that asked for one JSON array instead of SSE)."""

    @abstractmethod
    def answer(
        self,
        final: Mapping[str, Any],
        *,
        model: str,
        created: int,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The client's JSON answer for the upstream's final answer (``body``: the client's)."""
