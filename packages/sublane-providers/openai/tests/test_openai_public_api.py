"""The public surface of sublane-provider-openai changes only on purpose."""

from __future__ import annotations

import sublane_provider_openai

OPENAI = [
    "PROVIDER", "OpenAISettings", "PUBLIC_BASE_URL", "OpenAIAdapter", "OPENAI_DIALECT", "EXHAUSTED_CODES",
    "build_adapter", "compact_body", "parse_credentials", "responses_body",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(sublane_provider_openai.__all__) == sorted(OPENAI)
