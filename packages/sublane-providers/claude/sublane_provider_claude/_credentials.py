"""Import of ``~/.claude/.credentials.json`` (PROTOCOLS §2.7), and of the bundle SubLane stores
(an account bundle carries that one, BULK-3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_providers import AccountIdentity, CredentialFormatError, ImportedCredentials
from sublane_providers.kit import optional_text, parse_timestamp, require_object, require_token


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize a Claude Code credential file; ``expiresAt`` is in milliseconds."""
    data = require_object(data, ".credentials.json")
    if "claudeAiOauth" in data:
        oauth = require_object(data["claudeAiOauth"], ".credentials.json 'claudeAiOauth'")
        where = ".credentials.json 'claudeAiOauth'"
    elif "accessToken" in data:
        oauth = data
        where = "credentials"
    elif "access_token" in data:  # the shape this parser makes (an exported account's)
        oauth = {
            "accessToken": data.get("access_token"),
            "refreshToken": data.get("refresh_token"),
            "expiresAt": data.get("expires_at"),
            "scopes": data.get("scopes"),
            "subscriptionType": data.get("subscription_type"),
            "rateLimitTier": data.get("rate_limit_tier"),
        }
        where = "credentials"
    else:
        raise CredentialFormatError("not a Claude .credentials.json: expected a 'claudeAiOauth' object")

    access_token = require_token(oauth, "accessToken", where)
    refresh_token = require_token(oauth, "refreshToken", where)
    scopes = oauth.get("scopes")
    if scopes is not None and not (
        isinstance(scopes, list) and all(isinstance(scope, str) for scope in scopes)
    ):
        raise CredentialFormatError(f"{where}: 'scopes' must be a list of strings")
    expires_at = parse_timestamp(oauth.get("expiresAt"))
    plan = optional_text(oauth, "subscriptionType")
    bundle: dict[str, Any] = {
        "access_token": access_token,
        "refresh_token": refresh_token,
        "expires_at": expires_at,
        "scopes": scopes or [],
        "subscription_type": plan,
        "rate_limit_tier": optional_text(oauth, "rateLimitTier"),
    }
    return ImportedCredentials(
        provider="claude", bundle=bundle, expires_at=expires_at, identity=AccountIdentity(plan=plan)
    )
