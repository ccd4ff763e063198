"""The Codex (ChatGPT login) provider: OpenAI Responses over HTTP/SSE and WebSocket."""

from sublane_providers.codex._adapter import KNOWN_MODELS, CodexAdapter, build_adapter
from sublane_providers.codex._credentials import parse_credentials
from sublane_providers.codex._failures import classify_failure
from sublane_providers.codex._login import CodexLogin
from sublane_providers.codex._quota import (
    windows_from_headers,
    windows_from_rate_limits_event,
    windows_from_usage,
)
from sublane_providers.codex._request import compact_body, responses_body, upstream_headers
from sublane_providers.codex._session import CodexSession
from sublane_providers.codex._stream import CodexStreamObserver, usage_of

__all__ = [
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
