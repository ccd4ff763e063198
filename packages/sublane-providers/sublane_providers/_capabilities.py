"""What a provider *may* offer beyond the required contract, each a small protocol of its own.

:class:`~sublane_providers.ProviderAdapter` is what every provider implements: send a model call
(build its request, read its answer, classify its failures), refresh credentials, discover models,
read quota. Anything more is optional and said by implementing one of these protocols — the
gateway asks ``isinstance(adapter, OpensSessions)``, never a flag and never a provider's name. An
adapter that does not offer a capability has no such method at all (no stub answering "not
supported").

They are runtime-checkable: ``isinstance`` looks for the members by name. Code on a hot path asks
once per adapter (the gateway's runtime keeps the answers by provider name), not per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sublane_providers._credentials import ImportedCredentials
from sublane_providers._identity import ClientIdentity
from sublane_providers._session import UpstreamSession
from sublane_providers._types import UpstreamFailure
from sublane_providers._upstream import UpstreamRequest

if TYPE_CHECKING:
    from sublane_providers._adapter import LoginFlow, Quota


@runtime_checkable
class OpensSessions(Protocol):
    """A persistent upstream socket for sequential turns (Responses over WebSocket)."""

    async def open_session(
        self, bundle: Mapping[str, Any], client_headers: Mapping[str, str], *, open_timeout: float
    ) -> UpstreamSession:
        """Raises :class:`~sublane_providers.SessionRefused` or
        :class:`~sublane_providers.UpstreamUnreachable`."""
        ...


@runtime_checkable
class SignsIn(Protocol):
    """An OAuth sign-in the admin completes by pasting the callback (CRED-9)."""

    def login(self) -> LoginFlow:
        """The provider's login flow."""
        ...


@runtime_checkable
class CompletesImports(Protocol):
    """Fills in what an imported credential file leaves out (e.g. the email, from a profile)."""

    async def complete_import(self, imported: ImportedCredentials) -> ImportedCredentials:
        """Best effort: never fails; the file's identity stands when the upstream cannot tell more."""
        ...


@runtime_checkable
class ChecksCredentials(Protocol):
    """Credentials the upstream must accept before an account is stored (PAID-1: an API key is
    checked by listing models). Unlike :class:`CompletesImports`, a refusal stops the import."""

    async def check_credentials(self, imported: ImportedCredentials) -> ImportedCredentials:
        """The credentials, when the upstream accepts them; raises
        :class:`~sublane_providers.CredentialsRefused` (a reason naming no secret) otherwise."""
        ...


@runtime_checkable
class TakesApiKeys(Protocol):
    """Accounts imported from an API key and a base URL (PAID-1), as the web's add form asks them."""

    #: The base URL a key imported without one is served at; empty: every import must name one.
    default_base_url: str
    #: Whether an import may name the models (a server that lists none).
    names_models: bool


@runtime_checkable
class RenewsCredentials(Protocol):
    """A re-authorization (``POST /api/accounts/{id}/credentials``) may give only what changed:
    PAID-4's "an admin gives a new key" keeps the account's server and model list."""

    def renewal_credentials(self, stored: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
        """The credentials to parse for a renewal: ``given``, completed from the ``stored`` bundle."""
        ...


@runtime_checkable
class CompletesBundles(Protocol):
    """Credential bundles that may lack something a request needs until a refresh completes them."""

    def bundle_complete(self, bundle: Mapping[str, Any]) -> bool:
        """Whether ``bundle`` has all a request needs."""
        ...


@runtime_checkable
class HasOtherHosts(Protocol):
    """An upstream served from several hosts: a request one could not serve may go to the next."""

    def next_host(self, request: UpstreamRequest, failure: UpstreamFailure | None) -> UpstreamRequest | None:
        """``request`` sent to another host, when ``failure`` (``None``: the host could not be
        reached) says another may serve it; ``None`` when there is no other to try."""
        ...


@runtime_checkable
class WrapsEvents(Protocol):
    """Stream events and JSON answers that wrap the protocol's own payload in an envelope."""

    def unwrap_event(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The protocol's own payload inside a decoded event or JSON answer."""
        ...


@runtime_checkable
class ReportsQuotaInStream(Protocol):
    """Stream events that carry the account's quota."""

    #: The event types that do (read with :meth:`quota_from_event`).
    quota_events: frozenset[str]

    def quota_from_event(self, payload: Mapping[str, Any], now: float) -> Quota:
        """``(plan, windows)`` of a decoded event whose type is in :attr:`quota_events`."""
        ...


@runtime_checkable
class SuggestsAliases(Protocol):
    """Names real clients send for this provider's models that its upstream does not list, each
    with the native id it stands for: every group's built-in model aliases (ALIAS-1), which admins
    may override or remove. Unlike :class:`AliasesModels`, the native id is what goes upstream."""

    def default_aliases(self) -> Mapping[str, str]:
        """``alias -> native model id``."""
        ...


@runtime_checkable
class AliasesModels(Protocol):
    """Other names the upstream accepts for its models (CAT-2)."""

    def model_aliases(self, models: frozenset[str]) -> frozenset[str]:
        """Names that serve the same capability as ``models``, sent upstream as the client sent
        them and not listed as models of their own."""
        ...


@runtime_checkable
class HasClientIdentity(Protocol):
    """A client identity the upstream checks (CLIENT-1): the provider's own client's headers, the
    way a client's version is read from them, SubLane's own identity at the effective version."""

    #: This adapter's identity; the gateway tells it the effective version (CLIENT-2).
    identity: ClientIdentity
