"""The Claude (Pro/Max OAuth) provider: the Anthropic Messages API over HTTP/SSE."""

from sublane_provider_claude._adapter import KNOWN_MODELS, ClaudeAdapter, build_adapter
from sublane_provider_claude._credentials import parse_credentials
from sublane_provider_claude._failures import classify_failure
from sublane_provider_claude._login import ClaudeLogin
from sublane_provider_claude._quota import windows_from_headers, windows_from_usage
from sublane_provider_claude._request import count_tokens_url, messages_body, messages_url, upstream_headers
from sublane_provider_claude._settings import ClaudeSettings
from sublane_provider_claude._stream import ClaudeStreamObserver, usage_of_message
from sublane_providers import ProviderPlugin

#: What the ``sublane.providers`` entry point names.
PROVIDER = ProviderPlugin(
    name="claude",
    settings=ClaudeSettings,
    build_adapter=build_adapter,
    parse_credentials=parse_credentials,
    order=20,
)

__all__ = [
    "PROVIDER",
    "ClaudeSettings",
    "ClaudeAdapter",
    "ClaudeLogin",
    "ClaudeStreamObserver",
    "KNOWN_MODELS",
    "build_adapter",
    "classify_failure",
    "count_tokens_url",
    "messages_body",
    "messages_url",
    "parse_credentials",
    "upstream_headers",
    "usage_of_message",
    "windows_from_headers",
    "windows_from_usage",
]
