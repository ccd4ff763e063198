"""The ``SUBLANE_*`` variable of the openai provider: where the OpenAI API is."""

from __future__ import annotations

from pydantic import Field

from sublane_providers import ProviderSettings

#: The OpenAI API as its official SDK takes it (``/v1`` included).
PUBLIC_BASE_URL = "https://api.openai.com/v1"


class OpenAISettings(ProviderSettings):
    """The OpenAI API: the base URL of accounts imported without a ``base_url`` of their own."""

    openai_base_url: str = Field(
        PUBLIC_BASE_URL,
        description="OpenAI API base URL (with /v1) for API-key accounts imported without base_url.",
    )
