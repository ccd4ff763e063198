"""The Claude (Pro/Max OAuth) provider."""

from sublane_providers.claude._credentials import parse_credentials

__all__ = ["parse_credentials"]
