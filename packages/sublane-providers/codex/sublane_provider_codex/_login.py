"""Adding a ChatGPT account by PKCE login with a pasted-back redirect (CRED-9)."""

from __future__ import annotations

import secrets

from sublane_provider_codex._credentials import parse_credentials
from sublane_provider_codex._errors import error_code
from sublane_providers import (
    ClientIdentity,
    CredentialFormatError,
    ImportedCredentials,
    MetadataHttp,
    PkcePair,
    RefreshFailed,
    new_pkce_pair,
)
from sublane_providers.kit import authorize_url

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"  # the public Codex CLI OAuth client
REDIRECT_URI = "http://localhost:1455/auth/callback"
SCOPES = "openid profile email offline_access"


class CodexLogin:
    """The OpenAI OAuth login of the Codex CLI, with its public client."""

    def __init__(
        self, *, auth_url: str, http: MetadataHttp, timeout: float, identity: ClientIdentity | None = None
    ) -> None:
        self._auth_url = auth_url.rstrip("/")
        self._http = http
        self._timeout = timeout
        self._identity = identity  # CLIENT-1: the sign-in carries SubLane's Codex identity

    def start_login(self) -> tuple[str, str, PkcePair]:
        """``(authorize_url, state, pkce)`` for a PKCE login of a ChatGPT account."""
        pkce = new_pkce_pair()
        state = secrets.token_urlsafe(24)
        url = authorize_url(
            f"{self._auth_url}/oauth/authorize",
            {
                "response_type": "code",
                "client_id": CLIENT_ID,
                "redirect_uri": REDIRECT_URI,
                "scope": SCOPES,
                "code_challenge": pkce.challenge,
                "code_challenge_method": "S256",
                "state": state,
                "id_token_add_organizations": "true",
                "codex_cli_simplified_flow": "true",
                "prompt": "login",
            },
        )
        return url, state, pkce

    async def complete_login(self, code: str, state: str, pkce: PkcePair) -> ImportedCredentials:
        """Exchange the pasted authorization code for tokens and read the identity from them.

        ``state`` is not part of OpenAI's code exchange; it is taken for one login signature across
        providers.

        Raises :class:`RefreshFailed`: ``permanent`` when the OAuth server refused the code (a new
        login is needed), transient for network failures and server errors.
        """
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        try:
            response = await self._http.post(
                f"{self._auth_url}/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": CLIENT_ID,
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "code_verifier": pkce.verifier,
                },
                headers=self._identity.headers() if self._identity is not None else None,
                timeout=self._timeout,
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None
        if response.status_code != 200:
            code_name = error_code(response.content) or f"http_{response.status_code}"
            raise RefreshFailed(code_name[:64], permanent=response.status_code < 500)
        try:
            payload = response.json()
        except ValueError:
            raise RefreshFailed("invalid_token_response", permanent=True) from None
        if not isinstance(payload, dict):
            raise RefreshFailed("invalid_token_response", permanent=True)
        try:
            return parse_credentials(
                {"tokens": {key: payload.get(key) for key in ("id_token", "access_token", "refresh_token")}}
            )
        except CredentialFormatError:
            raise RefreshFailed("invalid_token_response", permanent=True) from None
