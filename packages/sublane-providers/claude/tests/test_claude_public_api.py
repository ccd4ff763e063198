"""The public surface of sublane-provider-claude changes only on purpose."""

from __future__ import annotations

import sublane_provider_claude

CLAUDE = [
    "PROVIDER", "ClaudeSettings",
    "ClaudeAdapter", "ClaudeLogin", "ClaudeStreamObserver", "KNOWN_MODELS", "build_adapter",
    "classify_failure", "count_tokens_url",
    "messages_body", "messages_url", "parse_credentials", "upstream_headers", "usage_of_message",
    "windows_from_headers", "windows_from_usage",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(sublane_provider_claude.__all__) == sorted(CLAUDE)
