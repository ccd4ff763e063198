"""The provider's own settings: none. Each account carries its server's base URL (an import field),
as one gateway may reach several servers."""

from __future__ import annotations

from sublane_providers import ProviderSettings


class CompatibleSettings(ProviderSettings):
    """No ``SUBLANE_*`` variable: the base URL is each account's."""
