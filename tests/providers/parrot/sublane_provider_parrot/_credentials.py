"""The parrot provider's credential file: ``{"access_token", "refresh_token", "expires_at", "email"}``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_providers import AccountIdentity, ImportedCredentials
from sublane_providers.kit import optional_text, parse_timestamp, require_object, require_token

FILE = "parrot.json"


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize a parrot credential file; the identity is its ``email`` and ``plan``."""
    data = require_object(data, FILE)
    bundle: dict[str, Any] = {
        "access_token": require_token(data, "access_token", FILE),
        "refresh_token": require_token(data, "refresh_token", FILE),
    }
    identity = AccountIdentity(email=optional_text(data, "email"), plan=optional_text(data, "plan"))
    return ImportedCredentials(
        provider="parrot",
        bundle=bundle,
        expires_at=parse_timestamp(data.get("expires_at")),
        identity=identity,
    )
