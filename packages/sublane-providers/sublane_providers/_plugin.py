"""What a provider distribution registers: its name, its settings and how to build its adapter.

A provider is its own distribution (``sublane-provider-<name>``) with one entry point in the group
``sublane.providers`` naming a :class:`ProviderPlugin`. Everything about its upstream lives there:
URLs and OAuth clients in its :class:`ProviderSettings` subclass (``SUBLANE_*`` variables like
every other setting), the adapter, credential parsing. The gateway finds plugins through
:mod:`sublane_providers._registry` and never imports a provider package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic_settings import BaseSettings, SettingsConfigDict

from sublane_core import Billing, Clock, Settings
from sublane_providers._adapter import ProviderAdapter
from sublane_providers._credentials import ImportedCredentials
from sublane_providers._transport import UpstreamClients

#: The entry point group provider distributions register in.
ENTRY_POINT_GROUP = "sublane.providers"


class ProviderSettings(BaseSettings):
    """A provider's own settings: ``SUBLANE_<FIELD>`` variables, also read from ``./.env``.

    The gateway composes every provider's settings class with its own into the one settings object
    ``sublane serve`` reads, so a provider's variables are set, listed and validated like any other.
    """

    model_config = SettingsConfigDict(
        env_prefix="SUBLANE_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
    )


SettingsT = TypeVar("SettingsT", bound=ProviderSettings)


@dataclass(frozen=True)
class ProviderPlugin(Generic[SettingsT]):
    """One provider, as its distribution registers it."""

    #: The name accounts are stored under and clients may prefix a model with (``name/model``).
    name: str
    #: Its settings class (its fields are ``SUBLANE_*`` variables).
    settings: type[SettingsT]
    #: ``(own settings, the gateway's settings, upstream clients, clock)`` → the adapter.
    build_adapter: Callable[[SettingsT, Settings, UpstreamClients, Clock], ProviderAdapter]
    #: Normalizes an imported credential file (raises ``CredentialFormatError``).
    parse_credentials: Callable[[Mapping[str, Any]], ImportedCredentials]
    #: Where it comes in lists (the web views' choices, ``GET /api/providers``): lower first.
    order: int = 100
    #: How its accounts are paid for (PAID-2): OAuth subscriptions, or API keys billed per token.
    billing: Billing = Billing.SUBSCRIPTION

    def settings_from(self, settings: Settings) -> SettingsT:
        """This provider's settings as ``settings`` holds them (a composed settings object has its
        fields); fields ``settings`` lacks are read from the environment, as at start-up."""
        given = type(settings).model_fields
        values = {name: getattr(settings, name) for name in self.settings.model_fields if name in given}
        return self.settings(**values)
