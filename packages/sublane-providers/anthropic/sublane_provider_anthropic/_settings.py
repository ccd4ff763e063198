"""The ``SUBLANE_ANTHROPIC_*`` variables of the anthropic (API key) provider."""

from __future__ import annotations

from pydantic import Field

from sublane_providers import ProviderSettings

PUBLIC_BASE_URL = "https://api.anthropic.com"


class AnthropicSettings(ProviderSettings):
    """The Anthropic API reached with API keys (metered accounts, PAID-1)."""

    anthropic_base_url: str = Field(
        PUBLIC_BASE_URL,
        description="PAID-1: the Anthropic API host (as the Anthropic SDK takes it: no /v1) of keys "
        "imported without a base_url of their own.",
    )
