"""The Gemini API with an API key (metered): ``generateContent`` and ``streamGenerateContent``."""

from sublane_core import Billing
from sublane_provider_gemini._adapter import GeminiAdapter, build_adapter, parse_credentials
from sublane_provider_gemini._failures import classify_failure, retry_delay
from sublane_provider_gemini._models import serving_models
from sublane_provider_gemini._request import model_url, upstream_body, upstream_headers
from sublane_provider_gemini._settings import DEFAULT_BASE_URL, GeminiSettings
from sublane_provider_gemini._stream import GeminiStreamObserver, usage_of
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="gemini",
    settings=GeminiSettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=60,
    billing=Billing.METERED,
)

__all__ = [
    "PROVIDER",
    "DEFAULT_BASE_URL",
    "GeminiSettings",
    "GeminiAdapter",
    "GeminiStreamObserver",
    "build_adapter",
    "classify_failure",
    "model_url",
    "parse_credentials",
    "retry_delay",
    "serving_models",
    "upstream_body",
    "upstream_headers",
    "usage_of",
]
