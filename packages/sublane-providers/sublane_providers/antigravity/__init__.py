"""The Google Antigravity (cloudcode-pa) provider."""

from sublane_providers.antigravity._credentials import parse_credentials

__all__ = ["parse_credentials"]
