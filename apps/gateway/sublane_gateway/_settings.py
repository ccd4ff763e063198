"""The gateway's settings: core's ``Settings`` composed with every installed provider's own.

Each provider distribution declares its ``SUBLANE_*`` variables (URLs, OAuth clients) in its own
``ProviderSettings`` class; the gateway builds one class holding them all, so ``sublane serve``
reads, validates and lists every variable at start-up as before, and a provider's settings are
given to it from that one object (``ProviderPlugin.settings_from``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from sublane_core import Settings, settings_help
from sublane_providers import ProviderPlugin, ProviderRegistrationError, provider_plugins


@functools.cache
def gateway_settings_class() -> type[Settings]:
    """``Settings`` plus every installed provider's settings fields (one class per process)."""
    return compose_settings(provider_plugins())


def compose_settings(plugins: Iterable[ProviderPlugin[Any]]) -> type[Settings]:
    """``Settings`` plus the settings fields of ``plugins``; two owners of one field are refused."""
    plugins = tuple(plugins)
    owners: dict[str, str] = {name: "sublane-core" for name in Settings.model_fields}
    for plugin in plugins:
        for name in plugin.settings.model_fields:
            if name in owners:
                raise ProviderRegistrationError(
                    f"the provider {plugin.name!r} declares the setting {name!r}, already {owners[name]}'s"
                )
            owners[name] = f"the provider {plugin.name!r}"
    bases: tuple[type, ...] = (Settings, *(plugin.settings for plugin in plugins))
    composed: type[Settings] = type("GatewaySettings", bases, {"__doc__": Settings.__doc__})
    return composed


def gateway_settings(**values: Any) -> Settings:
    """The gateway's settings from the environment, ``./.env`` and ``values`` (which win)."""
    return gateway_settings_class()(**values)


def gateway_settings_help() -> list[tuple[str, str, str]]:
    """``(variable, default, meaning)`` of core's settings, then each provider's."""
    rows = settings_help(Settings)
    for plugin in provider_plugins():
        rows += settings_help(plugin.settings)
    return rows
