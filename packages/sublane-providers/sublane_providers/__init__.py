"""SubLane provider adapters: Codex, Claude and Antigravity, found through one registry."""

from sublane_providers._credentials import AccountIdentity, CredentialFormatError, ImportedCredentials
from sublane_providers._jwt import expiry_of, unverified_claims
from sublane_providers._registry import UnknownProviderError, parse_credentials, provider_names

__version__ = "0.1.0"

__all__ = [
    # registry
    "UnknownProviderError",
    "parse_credentials",
    "provider_names",
    # credentials
    "AccountIdentity",
    "CredentialFormatError",
    "ImportedCredentials",
    # tokens
    "expiry_of",
    "unverified_claims",
]
