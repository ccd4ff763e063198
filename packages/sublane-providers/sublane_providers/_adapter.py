"""The adapter interface every provider implements: the only door from the gateway to a provider.

The required contract is small — send a model call (build its request, read its answer, classify
its failures, read the quota its answers report), refresh credentials, discover models, read
quota — and is this module's :class:`ProviderAdapter`. What only some providers offer (upstream
sessions, a sign-in, several hosts, wrapped events, quota in stream events, model aliases…) is a
protocol of its own in :mod:`sublane_providers._capabilities`, found with ``isinstance``.

Adapters are plain objects sharing the process's transport; they keep no per-request state (a fresh
:class:`StreamObserver` or :class:`~sublane_providers.UpstreamSession` carries that). The gateway
holds adapters by name (:func:`~sublane_providers.build_adapters`) and never asks which provider one
is: what differs between providers is said by the adapter's attributes and capabilities.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from sublane_core import PLAIN_DIALECT, Dialect, UpstreamOperation, WireProtocol, signals
from sublane_providers._credentials import ImportedCredentials
from sublane_providers._oauth import PkcePair
from sublane_providers._refresh import RefreshedCredentials
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
    """One upstream provider, as the gateway uses it: what every provider must do.

    Optional capabilities are protocols of :mod:`sublane_providers._capabilities` an adapter
    implements as well (``OpensSessions``, ``SignsIn``, ``CompletesImports``, ``CompletesBundles``,
    ``HasOtherHosts``, ``WrapsEvents``, ``ReportsQuotaInStream``, ``AliasesModels``).
    """

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
    #: What accounts of this provider are known to serve, used while discovery fails.
    fallback_models: ClassVar[frozenset[str]] = frozenset()
    #: How long the upstream keeps a prompt-cache prefix unused, in seconds (COST-4: a later turn
    #: that missed after a longer pause is ``expired``). Each provider declares its own; see
    #: :meth:`cache_lifetime_s` for one a request can choose.
    cache_lifetime: ClassVar[float] = 300.0
    #: Answer headers (lower-case name prefixes) that reach a client of the adapter's own protocol
    #: unchanged (native calls only; CLIENT-5): what the provider's own clients read from them.
    native_reply_header_prefixes: ClassVar[tuple[str, ...]] = ()

    # -- credentials ----------------------------------------------------------------------------------

    @staticmethod
    @abstractmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        """Normalize an imported credential file."""

    @abstractmethod
    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Fresh credentials, or :class:`~sublane_providers.RefreshFailed`."""

    # -- a model call ---------------------------------------------------------------------------------

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

    @abstractmethod
    def new_observer(self, state: StreamState | None = None) -> StreamObserver:
        """A fresh observer for one response, filling ``state`` (a new one when omitted)."""

    @abstractmethod
    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        """What an error answer (HTTP status >= 300) means."""

    @abstractmethod
    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        """``(plan, windows)`` reported on an inference response's headers (empty when none)."""

    def cache_lifetime_s(self, body: Mapping[str, Any]) -> float:
        """The prompt-cache lifetime a request in the adapter's protocol asks for (COST-4):
        :attr:`cache_lifetime` unless the provider lets a request choose another."""
        return self.cache_lifetime

    # -- metadata -------------------------------------------------------------------------------------

    @abstractmethod
    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
        """``(plan, windows)`` of the account's subscription quota."""

    @abstractmethod
    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """Model IDs the account may use."""


def stream_request(
    adapter: ProviderAdapter,
    bundle: Mapping[str, Any],
    body: Mapping[str, Any],
    client_headers: Mapping[str, str],
    *,
    bound: bool,
) -> UpstreamRequest:
    """A streaming inference request (:attr:`UpstreamOperation.STREAM`) of ``adapter``."""
    return adapter.build_request(UpstreamOperation.STREAM, bundle, body, client_headers, bound=bound)
