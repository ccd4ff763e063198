"""The Claude (Pro/Max OAuth) provider: the Anthropic Messages API over HTTP/SSE."""

from sublane_providers.claude._adapter import KNOWN_MODELS, ClaudeAdapter, build_adapter
from sublane_providers.claude._credentials import parse_credentials
from sublane_providers.claude._failures import classify_failure
from sublane_providers.claude._login import ClaudeLogin
from sublane_providers.claude._quota import windows_from_headers, windows_from_usage
from sublane_providers.claude._request import count_tokens_url, messages_body, messages_url, upstream_headers
from sublane_providers.claude._stream import ClaudeStreamObserver, usage_of_message

__all__ = [
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
