"""A persistent upstream socket carrying one conversation's sequential turns (Codex WebSocket)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from sublane_providers._egress import EgressFailed
from sublane_providers._types import UpstreamFailure


class SessionRefused(Exception):
    """The upstream refused to open the socket; ``failure`` says what the answer means."""

    def __init__(self, failure: UpstreamFailure) -> None:
        super().__init__(failure.code)
        self.failure = failure


class UpstreamUnreachable(Exception):
    """The upstream could not be reached (connection, TLS, handshake time-out)."""


class SessionEgressFailed(UpstreamUnreachable, EgressFailed):
    """The account's egress proxy could not be reached or refused the tunnel (EGRESS-2)."""


class SessionClosed(Exception):
    """The upstream closed the socket."""


class UpstreamSession(ABC):
    """One open upstream socket. Not shared between client connections."""

    @abstractmethod
    async def send_turn(self, body: Mapping[str, Any], *, model: str) -> None:
        """Start a turn for the client's ``body`` (its protocol is the adapter's)."""

    @abstractmethod
    async def recv(self) -> str:
        """The next frame as text; raises :class:`SessionClosed`."""

    @abstractmethod
    async def close(self) -> None:
        """Close the socket (never raises)."""
