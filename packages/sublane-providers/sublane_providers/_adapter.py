"""The adapter interface every provider implements: the only door from the gateway to a provider.

An adapter knows one upstream: which protocol it speaks, how its credential files look, how to
build the upstream request for each operation it offers, how to read its stream for what
scheduling and records need, how to classify its error answers, how to refresh (and optionally log
in) its OAuth credentials, and how to read its quota and model catalogue. Adapters are plain
objects sharing the process's transport; they keep no per-request state (a fresh
:class:`StreamObserver` or :class:`~sublane_providers.UpstreamSession` carries that).

The gateway holds adapters by name (:func:`~sublane_providers.build_adapters`) and never asks which
provider one is: what differs between providers is said by the adapter's attributes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from sublane_core import PLAIN_DIALECT, Dialect, SubLaneError, UpstreamOperation, WireProtocol, signals
from sublane_providers._credentials import ImportedCredentials
from sublane_providers._oauth import PkcePair
from sublane_providers._refresh import RefreshedCredentials
from sublane_providers._session import UpstreamSession
from sublane_providers._types import StreamState, UpstreamFailure
from sublane_providers._upstream import UpstreamRequest

Quota = tuple[str | None, tuple[signals.QuotaWindow, ...]]  # (plan, windows)


class StreamObserver(Protocol):
    """Reads a provider's stream (and JSON answers) into a :class:`StreamState`, decoding little."""

    state: StreamState

    def wants(self, name: str | None) -> bool:
        """Whether an event of this SSE name needs its data decoded."""
        ...

    def observe(self, name: str | None, data: str | None) -> dict[str, Any] | None:
        """Record what one SSE event tells; returns the decoded payload when it decoded one.

        An event it does not :meth:`wants` is only counted (``state.events``): readers in a hurry
        may count such an event themselves instead of calling this (issue #19).
        """
        ...

    def observe_data(self, name: str | None, data: bytes | None) -> dict[str, Any] | None:
        """:meth:`observe` with the data in its UTF-8 bytes."""
        ...

    def observe_payload(self, payload: dict[str, Any]) -> None:
        """Record what an already decoded event tells."""
        ...

    def observe_answer(self, payload: dict[str, Any]) -> None:
        """Record what a whole JSON answer (a non-streaming inference, a compaction) tells."""
        ...


class LoginFlow(Protocol):
    """A PKCE login with a pasted-back callback (CRED-9)."""

    def start_login(self) -> tuple[str, str, PkcePair]:
        """``(authorize_url, state, pkce)``."""
        ...

    async def complete_login(self, code: str, state: str, pkce: PkcePair) -> ImportedCredentials:
        """Trade the pasted code for credentials; :class:`~sublane_providers.RefreshFailed` otherwise."""
        ...


class ProviderAdapter(ABC):
    """One upstream provider, as the gateway uses it."""

    name: ClassVar[str]
    #: How people call the provider (the web views' choices; ``GET /api/providers``).
    label: ClassVar[str] = ""
    #: The credential file an import takes, in the words of the people who have it.
    credential_file: ClassVar[str] = ""
    #: What an account's identity ``subject`` is to admins (the web views show it beside the email
    #: and plan when set, e.g. ``"project"``); empty: an internal id, not shown.
    subject_label: ClassVar[str] = ""
    #: The protocol the upstream speaks; clients of another protocol need a translator.
    protocol: ClassVar[WireProtocol]
    #: What the upstream refuses, drops and requires of that protocol: applied to every body
    #: translated for it (the generic translation knows no provider).
    dialect: ClassVar[Dialect] = PLAIN_DIALECT
    #: The operations :meth:`build_request` can build.
    operations: ClassVar[frozenset[UpstreamOperation]]
    #: Whether a token may still be used for a while after a transient refresh failure (CRED-2).
    refresh_fallback: ClassVar[bool] = False
    #: Whether a JSON answer is read from a stream (the upstream only streams inferences).
    json_from_stream: ClassVar[bool] = False
    #: Whether :meth:`open_session` offers a persistent upstream socket for sequential turns.
    sessions: ClassVar[bool] = False
    #: Stream event types that carry quota (read with :meth:`quota_from_event`).
    quota_events: ClassVar[frozenset[str]] = frozenset()
    #: What accounts of this provider are known to serve, used while discovery fails.
    fallback_models: ClassVar[frozenset[str]] = frozenset()
    #: Whether stream events and JSON answers wrap the protocol's own payload (see :meth:`unwrap_event`).
    wrapped_events: ClassVar[bool] = False

    @staticmethod
    @abstractmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        """Normalize an imported credential file."""

    async def complete_import(self, imported: ImportedCredentials) -> ImportedCredentials:
        """Fill in what an imported file leaves out (e.g. the email, from a profile endpoint).

        Best effort: never fails; the file's identity stands when the upstream cannot tell more.
        """
        return imported

    @abstractmethod
    def build_request(
        self,
        operation: UpstreamOperation,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
        conversation_key: str | None = None,
    ) -> UpstreamRequest:
        """The upstream request for ``operation`` on ``body`` (in the adapter's protocol).

        ``client_headers`` are the client's (lower-case names); ``bound`` says whether the call
        belongs to a conversation (``conversation_key``, AFF-1), which an upstream may use as its
        cache key. An operation outside :attr:`operations` is a programming error.
        """

    def stream_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> UpstreamRequest:
        """A streaming inference request (:attr:`UpstreamOperation.STREAM`)."""
        return self.build_request(UpstreamOperation.STREAM, bundle, body, client_headers, bound=bound)

    async def open_session(
        self, bundle: Mapping[str, Any], client_headers: Mapping[str, str], *, open_timeout: float
    ) -> UpstreamSession:
        """A persistent upstream socket (when :attr:`sessions`); raises
        :class:`~sublane_providers.SessionRefused` or :class:`~sublane_providers.UpstreamUnreachable`."""
        raise SubLaneError("unsupported_for_provider", f"{self.name} offers no upstream sessions.")

    def next_host(self, request: UpstreamRequest, failure: UpstreamFailure | None) -> UpstreamRequest | None:
        """``request`` sent to another host of the provider, when ``failure`` (``None``: the host could
        not be reached) says another host may serve it; ``None`` when there is no other to try."""
        return None

    def bundle_complete(self, bundle: Mapping[str, Any]) -> bool:
        """Whether a credential bundle has all a request needs (else :meth:`refresh` completes it)."""
        return True

    def unwrap_event(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The protocol's own payload inside a decoded event or JSON answer (:attr:`wrapped_events`)."""
        return payload

    @abstractmethod
    def new_observer(self, state: StreamState | None = None) -> StreamObserver:
        """A fresh observer for one response, filling ``state`` (a new one when omitted)."""

    @abstractmethod
    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        """What an error answer (HTTP status >= 300) means."""

    @abstractmethod
    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Fresh credentials, or :class:`~sublane_providers.RefreshFailed`."""

    def login(self) -> LoginFlow | None:
        """The provider's OAuth login, when it has one."""
        return None

    @abstractmethod
    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
        """``(plan, windows)`` of the account's subscription quota."""

    @abstractmethod
    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """Model IDs the account may use."""

    def model_aliases(self, models: frozenset[str]) -> frozenset[str]:
        """Other names the provider accepts for these models (CAT-2); they serve the same capability,
        go upstream as the client sent them, and are not listed as models of their own."""
        return frozenset()

    @abstractmethod
    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        """``(plan, windows)`` reported on an inference response's headers (empty when none)."""

    def quota_from_event(self, payload: Mapping[str, Any], now: float) -> Quota:
        """``(plan, windows)`` of a decoded stream event whose type is in :attr:`quota_events`."""
        return None, ()
