"""Import of an Antigravity / Google OAuth token JSON (PROTOCOLS §3.8).

Accepted shapes: the Antigravity token file (``access_token``, ``refresh_token``, ``expires_in``,
``timestamp`` in ms, ``expired`` RFC 3339, ``email``, ``project_id``) and Google's own OAuth
credential files (``expiry_date`` in ms, optional ``id_token``). The refresh token is what matters:
Google does not rotate it, and a missing or stale access token is refreshed on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_providers import AccountIdentity, CredentialFormatError, ImportedCredentials, unverified_claims
from sublane_providers.kit import (
    optional_text,
    optional_token,
    parse_timestamp,
    require_object,
    require_token,
)


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize a Google OAuth token file for Antigravity."""
    data = require_object(data, "token JSON")
    if "refresh_token" not in data:
        raise CredentialFormatError("not a Google OAuth token file: expected a 'refresh_token'")
    kind = data.get("type")
    if kind is not None and kind not in ("antigravity", "authorized_user"):
        raise CredentialFormatError(f"token JSON of type {kind!r} is not an Antigravity login")
    refresh_token = require_token(data, "refresh_token", "token JSON")
    access_token = optional_token(data, "access_token", "token JSON")
    id_token = optional_token(data, "id_token", "token JSON")

    expires_at = parse_timestamp(data.get("expiry_date")) or parse_timestamp(data.get("expired"))
    if expires_at is None:
        issued = parse_timestamp(data.get("timestamp"))
        lifetime = data.get("expires_in")
        if issued is not None and isinstance(lifetime, int | float) and not isinstance(lifetime, bool):
            expires_at = parse_timestamp(issued + lifetime) if abs(lifetime) < 1e11 else None
    if access_token is None:
        expires_at = None  # nothing usable until the first refresh

    claims = unverified_claims(id_token) if id_token else None
    email = optional_text(data, "email") or optional_text(claims or {}, "email")
    project_id = optional_text(data, "project_id")
    bundle: dict[str, Any] = {
        "access_token": access_token,
        "refresh_token": refresh_token,
        "expires_at": expires_at,
        "project_id": project_id,
        "email": email,
    }
    return ImportedCredentials(
        provider="antigravity",
        bundle=bundle,
        expires_at=expires_at,
        identity=AccountIdentity(email=email, subject=project_id),
    )
