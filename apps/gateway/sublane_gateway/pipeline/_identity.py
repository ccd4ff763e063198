"""Whose client identity one model call carries upstream (CLIENT-1), and version refusals (CLIENT-3).

A native call (the client speaks its provider's own protocol) whose own identity is well-formed and
at or above the provider's effective version passes it unchanged; every other call — translated,
an older client, no usable identity — carries SubLane's identity at the effective version (the
provider's :class:`~sublane_providers.ClientIdentity` replaces the client's headers).

A version refusal (``FailureKind.CLIENT_VERSION``) is sent again at once, with SubLane's identity,
when the refused call carried a version below the effective version (it rose meanwhile: another
replica saw a newer client, an admin pinned one); otherwise the client is told
``client_version_too_old``. A model whose catalogue names a floor above what the call would carry
is refused before any upstream call. Each refusal is told to observers through
``signals.client_version_refused`` (the seam for a list of upstream changes, CLIENT-7).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from sublane_core import WireProtocol, signals
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._client_versions import ClientVersions
from sublane_providers import ProviderAdapter, UpstreamFailure, version_below

__all__ = ["CLIENT_VERSION_CODE", "CallIdentity", "too_old_message"]

CLIENT_VERSION_CODE = "client_version_too_old"


class CallIdentity:
    """The identity decision of one call, over its attempts (each attempt asks :meth:`headers_for`)."""

    __slots__ = ("_call", "_claimed", "_forced", "_headers", "_protocol", "_resent", "_versions", "carried")

    def __init__(
        self,
        versions: ClientVersions | None,
        call: ModelCall | None,
        protocol: WireProtocol,
        client_headers: Mapping[str, str],
    ) -> None:
        self._versions = versions
        self._call = call
        self._protocol = protocol
        self._headers = client_headers
        self._forced = False  # after a resend: SubLane's identity whatever the client sent
        self._resent = False
        # provider → the version the client's headers claim: read once per call, not per question
        # (three regex reads a call before issue #49)
        self._claimed: dict[str, str | None] = {}
        #: The client version the last attempt carried (``None``: a provider without an identity).
        self.carried: str | None = None

    def _own_version(self, adapter: ProviderAdapter, effective: str) -> str | None:
        """The client's own version when it may pass unchanged on ``adapter``."""
        if self._forced or adapter.protocol is not self._protocol or self._versions is None:
            return None
        name = adapter.name
        claimed = self._claimed
        if name in claimed:
            version = claimed[name]
        else:
            version = claimed[name] = self._versions.identities[name].client_version(self._headers)
        return version if version is not None and not version_below(version, effective) else None

    def would_carry(self, adapter: ProviderAdapter) -> str | None:
        """The version a call on ``adapter`` would carry now (``None``: no identity to speak of)."""
        versions = self._versions
        if versions is None or adapter.name not in versions.identities:
            return None
        effective = versions.effective(adapter.name)
        return self._own_version(adapter, effective) or effective

    def headers_for(self, adapter: ProviderAdapter, *, probe: bool = False) -> Mapping[str, str]:
        """The headers an attempt on ``adapter`` is built from: the client's, or with SubLane's
        identity (always for a recovery probe, COOL-4: whether the account recovered is SubLane's
        question, not the client's)."""
        versions = self._versions
        if versions is None or adapter.name not in versions.identities:
            self.carried = None
            return self._headers
        effective = versions.effective(adapter.name)
        own = None if probe else self._own_version(adapter, effective)
        if own is not None:  # the upstream's acceptance of it counts as seen (CLIENT-2)
            self.carried = own
            if self._call is not None:
                self._call.on_success = partial(versions.saw, adapter.name, own)
            return self._headers
        self.carried = effective
        if self._call is not None:
            self._call.on_success = None
        return versions.identities[adapter.name].replaced(self._headers, effective)

    def floor_refused(self, adapter: ProviderAdapter, model: str) -> str | None:
        """The catalogue's floor for ``model`` on ``adapter`` when the call would carry less."""
        versions = self._versions
        if versions is None or adapter.name not in versions.identities:
            return None
        floor = versions.identities[adapter.name].model_floor(model)
        carried = self.would_carry(adapter)
        if floor is None or carried is None or not version_below(carried, floor):
            return None
        self.carried = carried
        return floor

    def resend(self, adapter: ProviderAdapter, failure: UpstreamFailure, model: str) -> bool:
        """After a version refusal: ``True`` to send once more with SubLane's identity (the refused
        call carried less than the effective version); otherwise observers are told of it."""
        versions = self._versions
        carried = self.carried
        if (
            not self._resent
            and versions is not None
            and carried is not None
            and adapter.name in versions.identities
            and version_below(carried, versions.effective(adapter.name))
        ):
            self._resent = self._forced = True
            return True
        call = self._call
        sender = call.sender if call is not None else versions
        request_id = call.request_id if call is not None else None
        needed = self.needed(adapter, failure, model)
        tell_refused(adapter.name, model, needed, carried, sender=sender, request_id=request_id)
        return False

    def needed(self, adapter: ProviderAdapter, failure: UpstreamFailure | None, model: str) -> str | None:
        """The version the upstream asked for, or the catalogue's floor for ``model``."""
        if failure is not None and failure.needed_version:
            return failure.needed_version
        versions = self._versions
        if versions is None or adapter.name not in versions.identities:
            return None
        return versions.identities[adapter.name].model_floor(model)


def tell_refused(
    provider: str,
    model: str,
    needed: str | None,
    carried: str | None,
    *,
    sender: object,
    request_id: str | None = None,
) -> None:
    """``signals.client_version_refused`` (CLIENT-3's seam for observers: the runtime lists it with
    the upstream changes, CLIENT-7)."""
    if signals.client_version_refused.has_receivers:
        signals.client_version_refused.send(
            signals.ClientVersionRefused(
                provider=provider, model=model, needed=needed, carried=carried, request_id=request_id
            ),
            sender=sender,
        )


def too_old_message(provider: str, model: str, needed: str | None, carried: str | None) -> str:
    """What the client is told with ``client_version_too_old``: the version needed and the remedy."""
    wanted = f"client version {needed} or newer" if needed else "a newer client version"
    sent = f" (SubLane sent {carried})" if carried else ""
    return (
        f"The {provider} model {model} needs {wanted}{sent}. An admin may pin the {provider} client "
        f"version SubLane presents: PUT /api/providers/{provider}/client-version "
        f'{{"version": "{needed or "x.y.z"}"}}.'
    )
