"""The ``SUBLANE_*`` variables of the parrot provider: where its upstream is."""

from __future__ import annotations

from pydantic import Field

from sublane_providers import ProviderSettings


class ParrotSettings(ProviderSettings):
    """The parrot upstream: one base URL serving model calls, token refresh, usage and models."""

    parrot_base_url: str = Field("http://127.0.0.1:9", description="Parrot upstream base (test provider).")
