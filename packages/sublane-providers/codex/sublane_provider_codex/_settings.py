"""The ``SUBLANE_*`` variables of the codex provider (names unchanged since they lived in core)."""

from __future__ import annotations

from pydantic import Field

from sublane_providers import ProviderSettings


class CodexSettings(ProviderSettings):
    """The Codex upstream: the ChatGPT backend and OpenAI's OAuth."""

    codex_base_url: str = Field("https://chatgpt.com/backend-api", description="Codex backend base.")
    openai_auth_url: str = Field("https://auth.openai.com", description="OpenAI OAuth base.")
