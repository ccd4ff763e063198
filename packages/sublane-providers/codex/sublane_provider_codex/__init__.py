"""The Codex (ChatGPT login) provider: OpenAI Responses over HTTP/SSE and WebSocket."""

from sublane_provider_codex._adapter import KNOWN_MODELS, CodexAdapter, build_adapter
from sublane_provider_codex._credentials import parse_credentials
from sublane_provider_codex._failures import classify_failure
from sublane_provider_codex._login import CodexLogin
from sublane_provider_codex._quota import (
    windows_from_headers,
    windows_from_rate_limits_event,
    windows_from_usage,
)
from sublane_provider_codex._request import compact_body, responses_body, upstream_headers
from sublane_provider_codex._session import CodexSession
from sublane_provider_codex._settings import CodexSettings
from sublane_provider_codex._stream import CodexStreamObserver, usage_of
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="codex",
    settings=CodexSettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=10,
)

__all__ = [
    "PROVIDER",
    "CodexSettings",
    "KNOWN_MODELS",
    "CodexAdapter",
    "CodexLogin",
    "CodexSession",
    "CodexStreamObserver",
    "build_adapter",
    "classify_failure",
    "compact_body",
    "parse_credentials",
    "responses_body",
    "upstream_headers",
    "usage_of",
    "windows_from_headers",
    "windows_from_rate_limits_event",
    "windows_from_usage",
]
