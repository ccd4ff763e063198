"""A test-only SubLane provider: accounts of an upstream that speaks OpenAI Responses over HTTP.

It lives in the test tree to prove that a provider is one distribution: installed beside the
gateway, found by its ``sublane.providers`` entry point, it serves every client protocol with no
change anywhere else (see ``docs/adding-a-provider.md``).
"""

from sublane_provider_parrot._adapter import KNOWN_MODELS, PARROT_DIALECT, ParrotAdapter, build_adapter
from sublane_provider_parrot._credentials import parse_credentials
from sublane_provider_parrot._failures import classify_failure
from sublane_provider_parrot._settings import ParrotSettings
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="parrot",
    settings=ParrotSettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=90,
)

__all__ = [
    "PARROT_DIALECT",
    "KNOWN_MODELS",
    "PROVIDER",
    "ParrotAdapter",
    "ParrotSettings",
    "build_adapter",
    "classify_failure",
    "parse_credentials",
]
