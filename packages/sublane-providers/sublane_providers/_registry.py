"""The provider registry: one line per provider. The gateway finds adapters here by name.

Each provider is a subpackage exposing ``parse_credentials`` (credential import) and, once it can
serve model requests, ``build_adapter(settings, transport, clock)``. Subpackages are imported
lazily, the first time a provider is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from sublane_core import Clock, Settings
from sublane_providers._adapter import ProviderAdapter
from sublane_providers._credentials import ImportedCredentials
from sublane_providers._transport import UpstreamClients

_MODULES: dict[str, str] = {
    "codex": "sublane_providers.codex",
    "claude": "sublane_providers.claude",
    "antigravity": "sublane_providers.antigravity",
}

AdapterFactory = Callable[[Settings, UpstreamClients, Clock], ProviderAdapter]


class UnknownProviderError(LookupError):
    """No provider of that name is registered."""


def provider_names() -> tuple[str, ...]:
    """The registered providers, in a stable order."""
    return tuple(_MODULES)


def _module(provider: str) -> ModuleType:
    module_name = _MODULES.get(provider)
    if module_name is None:
        raise UnknownProviderError(provider)
    return importlib.import_module(module_name)


def parse_credentials(provider: str, data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize an imported credential file with the named provider's parser."""
    parser: Callable[[Mapping[str, Any]], ImportedCredentials] = _module(provider).parse_credentials
    return parser(data)


def build_adapters(
    settings: Settings, transport: UpstreamClients, clock: Clock
) -> dict[str, ProviderAdapter]:
    """An adapter for every registered provider that serves model requests, by name."""
    adapters: dict[str, ProviderAdapter] = {}
    for name in _MODULES:
        factory: AdapterFactory | None = getattr(_module(name), "build_adapter", None)
        if factory is not None:
            adapters[name] = factory(settings, transport, clock)
    return adapters
