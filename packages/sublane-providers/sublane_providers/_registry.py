"""The provider registry: the plugins installed distributions register under ``sublane.providers``.

The gateway finds adapters here by name. Nothing here names a provider: installing a provider
distribution is what makes it known (PEP 621 entry points, read with :mod:`importlib.metadata`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from sublane_core import Billing, Clock, Settings
from sublane_providers._adapter import ProviderAdapter
from sublane_providers._credentials import ImportedCredentials
from sublane_providers._plugin import ENTRY_POINT_GROUP, ProviderPlugin
from sublane_providers._transport import UpstreamClients


class UnknownProviderError(LookupError):
    """No provider of that name is registered."""


class ProviderRegistrationError(RuntimeError):
    """An installed distribution registered something that is not a usable provider."""


@functools.cache
def provider_plugins() -> tuple[ProviderPlugin[Any], ...]:
    """Every installed provider, in their stated order (then by name); loaded once per process."""
    plugins: dict[str, ProviderPlugin[Any]] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        plugin = entry.load()
        if not isinstance(plugin, ProviderPlugin):
            raise ProviderRegistrationError(
                f"{entry.value} (entry point {entry.name!r}) is not a ProviderPlugin"
            )
        if plugin.name != entry.name:
            raise ProviderRegistrationError(
                f"entry point {entry.name!r} names the provider {plugin.name!r}; they must be equal"
            )
        if plugin.name in plugins and plugins[plugin.name] is not plugin:
            raise ProviderRegistrationError(f"two distributions register the provider {plugin.name!r}")
        plugins[plugin.name] = plugin
    return tuple(sorted(plugins.values(), key=lambda plugin: (plugin.order, plugin.name)))


def provider_plugin(provider: str) -> ProviderPlugin[Any]:
    """The installed provider of that name."""
    for plugin in provider_plugins():
        if plugin.name == provider:
            return plugin
    raise UnknownProviderError(provider)


def provider_names() -> tuple[str, ...]:
    """The registered providers, in a stable order."""
    return tuple(plugin.name for plugin in provider_plugins())


def provider_billing(provider: str) -> Billing:
    """How the named provider's accounts are paid for (PAID-2); an unknown provider's accounts
    (a distribution uninstalled since) count as subscriptions."""
    try:
        return provider_plugin(provider).billing
    except UnknownProviderError:
        return Billing.SUBSCRIPTION


def parse_credentials(provider: str, data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize an imported credential file with the named provider's parser."""
    return provider_plugin(provider).parse_credentials(data)


def build_adapters(
    settings: Settings, transport: UpstreamClients, clock: Clock
) -> dict[str, ProviderAdapter]:
    """An adapter for every installed provider, by name, each with its own settings."""
    return {
        plugin.name: plugin.build_adapter(plugin.settings_from(settings), settings, transport, clock)
        for plugin in provider_plugins()
    }
