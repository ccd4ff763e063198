"""The anthropic provider: Anthropic API keys (metered, PAID-1) serving the Messages API."""

from sublane_core import Billing
from sublane_provider_anthropic._adapter import AnthropicAdapter, aliases_of, build_adapter, parse_credentials
from sublane_provider_anthropic._request import OAUTH_BETA, api_betas, api_headers
from sublane_provider_anthropic._settings import PUBLIC_BASE_URL, AnthropicSettings
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="anthropic",
    settings=AnthropicSettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=60,
    billing=Billing.METERED,
)

__all__ = [
    "PROVIDER",
    "PUBLIC_BASE_URL",
    "OAUTH_BETA",
    "AnthropicAdapter",
    "AnthropicSettings",
    "aliases_of",
    "api_betas",
    "api_headers",
    "build_adapter",
    "parse_credentials",
]
