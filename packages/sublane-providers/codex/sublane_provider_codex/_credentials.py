"""Import of ``~/.codex/auth.json`` (PROTOCOLS §1.10) and the flat shape some tools store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_providers import (
    AccountIdentity,
    CredentialFormatError,
    ImportedCredentials,
    expiry_of,
    unverified_claims,
)
from sublane_providers.kit import (
    optional_text,
    optional_token,
    parse_timestamp,
    require_object,
    require_token,
)

AUTH_CLAIM = "https://api.openai.com/auth"


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """Normalize a Codex credential file; identity comes from the id_token's claims."""
    data = require_object(data, "auth.json")
    tokens: Mapping[str, Any]
    if "tokens" in data:
        if data.get("tokens") is None:
            raise CredentialFormatError(
                "auth.json holds no ChatGPT login (an API-key file cannot serve a subscription pool)"
            )
        tokens = require_object(data["tokens"], "auth.json 'tokens'")
        where = "auth.json 'tokens'"
    elif "access_token" in data or "refresh_token" in data:
        tokens = data
        where = "credentials"
    else:
        raise CredentialFormatError("not a Codex auth.json: expected a 'tokens' object")

    access_token = require_token(tokens, "access_token", where)
    refresh_token = require_token(tokens, "refresh_token", where)
    id_token = optional_token(tokens, "id_token", where)
    claims = unverified_claims(id_token) if id_token else None
    if id_token and claims is None:
        raise CredentialFormatError(f"{where}: 'id_token' is not a JWT")
    auth: Mapping[str, Any] = {}
    if claims and isinstance(claims.get(AUTH_CLAIM), Mapping):
        auth = claims[AUTH_CLAIM]

    account_id = optional_text(tokens, "account_id", header=True) or optional_text(
        auth, "chatgpt_account_id", header=True
    )  # sent as the chatgpt-account-id header
    identity = AccountIdentity(
        email=optional_text(claims or {}, "email") or optional_text(data, "email"),
        plan=optional_text(auth, "chatgpt_plan_type"),
        subject=account_id,
    )
    last_refresh = parse_timestamp(data.get("last_refresh"))
    bundle: dict[str, Any] = {
        "access_token": access_token,
        "refresh_token": refresh_token,
        "id_token": id_token,
        "account_id": account_id,
        "last_refresh": last_refresh,
    }
    return ImportedCredentials(
        provider="codex", bundle=bundle, expires_at=expiry_of(access_token), identity=identity
    )
