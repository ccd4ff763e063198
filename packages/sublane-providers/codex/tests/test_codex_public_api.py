"""The public surface of sublane-provider-codex changes only on purpose."""

from __future__ import annotations

import sublane_provider_codex

CODEX = [
    "PROVIDER", "CodexSettings",
    "KNOWN_MODELS", "CodexAdapter", "CodexLogin", "CodexSession", "CodexStreamObserver", "build_adapter",
    "classify_failure", "compact_body", "parse_credentials", "responses_body", "upstream_headers",
    "usage_of", "windows_from_headers", "windows_from_rate_limits_event", "windows_from_usage",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(sublane_provider_codex.__all__) == sorted(CODEX)
