"""The public surface of sublane-provider-gemini changes only on purpose."""

from __future__ import annotations

import sublane_provider_gemini

GEMINI = [
    "PROVIDER", "DEFAULT_BASE_URL", "GeminiSettings", "GeminiAdapter", "GeminiStreamObserver",
    "build_adapter", "classify_failure", "model_url", "parse_credentials", "retry_delay",
    "serving_models", "upstream_body", "upstream_headers", "usage_of",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(sublane_provider_gemini.__all__) == sorted(GEMINI)
