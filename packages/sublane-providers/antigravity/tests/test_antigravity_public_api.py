"""The public surface of sublane-provider-antigravity changes only on purpose."""

from __future__ import annotations

import sublane_provider_antigravity

ANTIGRAVITY = [
    "PROVIDER", "AntigravitySettings",
    "KNOWN_MODELS", "AntigravityAdapter", "AntigravityLogin", "AntigravityStreamObserver", "GoogleOAuth",
    "ProjectUnavailable", "build_adapter", "classify_failure", "discover_project", "hosts_of", "models_of",
    "parse_credentials", "parse_duration", "session_id", "unwrap", "upstream_headers", "usage_of",
    "windows_from_models", "wrapped_body",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(sublane_provider_antigravity.__all__) == sorted(ANTIGRAVITY)
