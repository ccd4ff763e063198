"""The ``SUBLANE_*`` variables of the claude provider (names unchanged since they lived in core)."""

from __future__ import annotations

from pydantic import Field

from sublane_providers import ProviderSettings


class ClaudeSettings(ProviderSettings):
    """The Claude upstream: the Anthropic API and Claude's OAuth."""

    claude_base_url: str = Field("https://api.anthropic.com", description="Claude API base.")
    claude_auth_url: str = Field("https://platform.claude.com", description="Claude OAuth base.")
    claude_authorize_url: str = Field(
        "https://claude.ai/oauth/authorize", description="Claude OAuth authorize page (PKCE login)."
    )
    claude_models_fallback: bool = Field(
        True,
        description="CAT-1: use the built-in Claude model list when GET /v1/models cannot be read "
        "with an account's OAuth token (off: such a discovery fails).",
    )
