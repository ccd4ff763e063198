"""Adding a Claude Pro/Max account by PKCE login with a pasted-back ``CODE#STATE`` (CRED-9)."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from sublane_provider_claude._credentials import parse_credentials
from sublane_providers import (
    AccountIdentity,
    CredentialFormatError,
    ImportedCredentials,
    PkcePair,
    RefreshFailed,
    new_pkce_pair,
)
from sublane_providers.kit import authorize_url as build_authorize_url
from sublane_providers.kit import optional_text

if TYPE_CHECKING:
    import httpx  # at run time: imported by the calls that use it (issue #49)

CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # the public Claude Code OAuth client
AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
# The manual flow: the page shows CODE#STATE for the admin to paste back (no local listener).
REDIRECT_URI = "https://console.anthropic.com/oauth/code/callback"
SCOPES = "user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload"


class ClaudeLogin:
    """Claude Code's OAuth login; the token endpoint and profile reader are the adapter's."""

    def __init__(
        self,
        *,
        authorize_url: str,
        token_call: Callable[[dict[str, str]], Awaitable[httpx.Response]],
        token_payload: Callable[[httpx.Response], dict[str, Any]],
        expires_at: Callable[[Mapping[str, Any]], float | None],
        error_code: Callable[[httpx.Response], str],
        read_profile: Callable[[Mapping[str, Any]], Awaitable[AccountIdentity]],
    ) -> None:
        self._authorize_url = authorize_url
        self._token_call = token_call
        self._token_payload = token_payload
        self._expires_at = expires_at
        self._error_code = error_code
        self._read_profile = read_profile

    def start_login(self) -> tuple[str, str, PkcePair]:
        """``(authorize_url, state, pkce)`` for a PKCE login of a Claude Pro/Max account.

        The redirect is Claude's manual page, which shows ``CODE#STATE`` to paste back.
        """
        pkce = new_pkce_pair()
        state = secrets.token_urlsafe(24)
        url = build_authorize_url(
            self._authorize_url,
            {
                "code": "true",
                "client_id": CLIENT_ID,
                "response_type": "code",
                "redirect_uri": REDIRECT_URI,
                "scope": SCOPES,
                "code_challenge": pkce.challenge,
                "code_challenge_method": "S256",
                "state": state,
            },
        )
        return url, state, pkce

    async def complete_login(self, code: str, state: str, pkce: PkcePair) -> ImportedCredentials:
        """Exchange the pasted authorization code for tokens; identity from the answer and the profile.

        Raises :class:`RefreshFailed`: ``permanent`` when the OAuth server refused the code (a new
        login is needed), transient for network failures, 408/429 and server errors.
        """
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        response = await self._token_call(
            {
                "grant_type": "authorization_code",
                "code": code,
                "state": state,
                "client_id": CLIENT_ID,
                "redirect_uri": REDIRECT_URI,
                "code_verifier": pkce.verifier,
            }
        )
        status = response.status_code
        if status != 200:
            permanent = 400 <= status < 500 and status not in (408, 429)
            raise RefreshFailed(self._error_code(response), permanent=permanent)
        try:
            payload = self._token_payload(response)
        except RefreshFailed:
            raise RefreshFailed("invalid_token_response", permanent=True) from None
        scope = payload.get("scope")
        expires_at = self._expires_at(payload)
        try:
            imported = parse_credentials(
                {
                    "claudeAiOauth": {
                        "accessToken": payload.get("access_token"),
                        "refreshToken": payload.get("refresh_token"),
                        "expiresAt": expires_at,
                        "scopes": scope.split() if isinstance(scope, str) else None,
                    }
                }
            )
        except CredentialFormatError:
            raise RefreshFailed("invalid_token_response", permanent=True) from None
        account = payload.get("account")
        account = account if isinstance(account, Mapping) else {}
        identity = AccountIdentity(
            email=optional_text(account, "email_address"), subject=optional_text(account, "uuid")
        )
        try:
            profile = await self._read_profile(imported.bundle)
        except (httpx.HTTPError, ValueError):
            profile = AccountIdentity()  # the login stands without it; the plan shows up later
        identity = AccountIdentity(
            email=profile.email or identity.email,
            plan=profile.plan,
            subject=profile.subject or identity.subject,
        )
        bundle = dict(imported.bundle, subscription_type=profile.plan)
        return ImportedCredentials(provider="claude", bundle=bundle, expires_at=expires_at, identity=identity)
