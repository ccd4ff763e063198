"""The Codex (ChatGPT login) provider."""

from sublane_providers.codex._credentials import parse_credentials

__all__ = ["parse_credentials"]
