"""The provider registry: the gateway finds adapters here by name and imports them lazily."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from sublane_providers._credentials import ImportedCredentials

_MODULES: dict[str, str] = {
    "codex": "sublane_providers.codex",
    "claude": "sublane_providers.claude",
    "antigravity": "sublane_providers.antigravity",
}


class UnknownProviderError(LookupError):
    """No provider of that name is registered."""


def provider_names() -> tuple[str, ...]:
    """The registered providers, in a stable order."""
    return tuple(_MODULES)


def parse_credentials(provider: str, data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize an imported credential file with the named provider's parser."""
    module_name = _MODULES.get(provider)
    if module_name is None:
        raise UnknownProviderError(provider)
    parser: Callable[[Mapping[str, Any]], ImportedCredentials] = importlib.import_module(
        module_name
    ).parse_credentials
    return parser(data)
