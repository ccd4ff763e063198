"""The ``SUBLANE_*`` variables of the antigravity provider (names unchanged since they lived in core)."""

from __future__ import annotations

from pydantic import Field, SecretStr

from sublane_providers import ProviderSettings


class AntigravitySettings(ProviderSettings):
    """The Antigravity upstream (cloudcode-pa) and Google's OAuth."""

    antigravity_base_url: str = Field(
        "https://cloudcode-pa.googleapis.com", description="Antigravity (cloudcode-pa) base."
    )
    google_auth_url: str = Field("https://oauth2.googleapis.com", description="Google OAuth base.")
    google_authorize_url: str = Field(
        "https://accounts.google.com/o/oauth2/v2/auth", description="Google OAuth authorize page (GEM-3)."
    )
    google_userinfo_url: str = Field(
        "https://www.googleapis.com/oauth2/v2/userinfo", description="Google userinfo (account email)."
    )
    google_client_id: str = Field(
        "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com",
        description="Google OAuth client id (default: Antigravity's public installed-app client).",
    )
    google_client_secret: SecretStr = Field(
        SecretStr("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"),
        description="Google OAuth client secret (default: the published installed-app value).",
    )
