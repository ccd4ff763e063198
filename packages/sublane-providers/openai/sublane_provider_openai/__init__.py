"""The openai provider: OpenAI API keys (metered accounts) serving OpenAI Responses (PAID-1)."""

from sublane_core import Billing
from sublane_provider_openai._adapter import EXHAUSTED_CODES, OpenAIAdapter, build_adapter
from sublane_provider_openai._credentials import parse_credentials
from sublane_provider_openai._request import OPENAI_DIALECT, compact_body, responses_body
from sublane_provider_openai._settings import PUBLIC_BASE_URL, OpenAISettings
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="openai",
    settings=OpenAISettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=40,
    billing=Billing.METERED,
)

__all__ = [
    "PROVIDER",
    "OpenAISettings",
    "PUBLIC_BASE_URL",
    "OpenAIAdapter",
    "OPENAI_DIALECT",
    "EXHAUSTED_CODES",
    "build_adapter",
    "compact_body",
    "parse_credentials",
    "responses_body",
]
