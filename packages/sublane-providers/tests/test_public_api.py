"""The public surface of sublane-providers changes only on purpose."""

from __future__ import annotations

import sublane_providers

EXPECTED = [
    "UnknownProviderError", "parse_credentials", "provider_names",
    "AccountIdentity", "CredentialFormatError", "ImportedCredentials",
    "expiry_of", "unverified_claims",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sublane_providers.__all__ == EXPECTED
