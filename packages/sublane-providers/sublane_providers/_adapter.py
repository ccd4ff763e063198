"""The adapter interface every provider implements, so the gateway treats providers alike.

An adapter knows one upstream: how its credential files look, how to build an inference request
in its native protocol, how to read its stream for what scheduling and records need, how to
classify its error answers, how to refresh its OAuth credentials, and how to read its quota and
model catalogue. Adapters are plain objects sharing one HTTP client; they keep no per-request state
(a fresh :class:`StreamObserver` carries that).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import httpx

from sublane_core import signals
from sublane_providers._credentials import ImportedCredentials
from sublane_providers._refresh import RefreshedCredentials
from sublane_providers._types import StreamState, UpstreamFailure


class StreamObserver(Protocol):
    """Reads a provider's stream into a :class:`StreamState`, decoding as little as it can."""

    state: StreamState

    def wants(self, name: str | None) -> bool:
        """Whether an event of this SSE name needs its data decoded."""
        ...

    def observe(self, name: str | None, data: str | None) -> dict[str, Any] | None:
        """Record what one SSE event tells; returns the decoded payload when it decoded one."""
        ...

    def observe_payload(self, payload: dict[str, Any]) -> None:
        """Record what an already decoded event tells."""
        ...


class ProviderAdapter(ABC):
    """One upstream provider, as the gateway uses it."""

    name: ClassVar[str]
    #: Whether a token may still be used for a while after a transient refresh failure (CRED-2).
    refresh_fallback: ClassVar[bool] = False

    @staticmethod
    @abstractmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        """Normalize an imported credential file."""

    @abstractmethod
    def stream_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> httpx.Request:
        """A streaming inference request for ``body`` (the client's native-protocol body)."""

    @abstractmethod
    def new_observer(self) -> StreamObserver:
        """A fresh observer for one response stream."""

    @abstractmethod
    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        """What an error answer (HTTP status >= 300) means."""

    @abstractmethod
    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Fresh credentials, or :class:`~sublane_providers.RefreshFailed`."""

    @abstractmethod
    async def read_quota(
        self, bundle: Mapping[str, Any], now: float
    ) -> tuple[str | None, tuple[signals.QuotaWindow, ...]]:
        """``(plan, windows)`` of the account's subscription quota."""

    @abstractmethod
    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """Model IDs the account may use."""

    @abstractmethod
    def quota_from_headers(
        self, headers: Mapping[str, str], now: float
    ) -> tuple[str | None, tuple[signals.QuotaWindow, ...]]:
        """``(plan, windows)`` reported on an inference response's headers (empty when none)."""
