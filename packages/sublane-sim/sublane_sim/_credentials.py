"""Credential files in the exact shapes users import (PROTOCOLS.md 1.10, 2.7, 3.8)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ._accounts import Account

__all__ = ["credential_file"]


def _rfc3339(unix_seconds: float) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def credential_file(account: Account, now: float) -> dict[str, Any]:
    """`~/.codex/auth.json`, `~/.claude/.credentials.json` or the Antigravity token JSON."""
    if account.provider == "codex":
        return {
            "auth_mode": "chatgpt",
            "OPENAI_API_KEY": None,
            "tokens": {
                "id_token": account.id_token,
                "access_token": account.access_token,
                "refresh_token": account.refresh_token,
                "account_id": account.account_id,
            },
            "last_refresh": _rfc3339(account.last_refresh),
        }
    if account.provider == "openai":  # an API key; the import adds the sim's base_url
        return {"api_key": account.api_key}
    if account.provider == "claude":
        return {
            "claudeAiOauth": {
                "accessToken": account.access_token,
                "refreshToken": account.refresh_token,
                "expiresAt": int(account.access_expires_at * 1000),
                "scopes": list(account.scopes),
                "subscriptionType": account.plan,
                "rateLimitTier": account.rate_limit_tier,
            }
        }
    return {
        "type": "antigravity",
        "access_token": account.access_token,
        "refresh_token": account.refresh_token,
        "expires_in": max(0, int(account.access_expires_at - now)),
        "timestamp": int(now * 1000),
        "expired": _rfc3339(account.access_expires_at),
        "email": account.email,
        "project_id": account.project_id,
    }
