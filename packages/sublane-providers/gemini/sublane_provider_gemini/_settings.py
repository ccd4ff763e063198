"""The ``SUBLANE_*`` variables of the gemini provider."""

from __future__ import annotations

from pydantic import Field

from sublane_providers import ProviderSettings

#: The Gemini API's public host, as the google-genai SDK takes its ``base_url`` (no version path).
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


class GeminiSettings(ProviderSettings):
    """The Gemini API (``generativelanguage.googleapis.com``)."""

    gemini_base_url: str = Field(
        DEFAULT_BASE_URL,
        description=(
            "Gemini API base (the bare host, as the google-genai SDK takes it) for keys imported "
            "without a base_url (PAID-1)."
        ),
    )
