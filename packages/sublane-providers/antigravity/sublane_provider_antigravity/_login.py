"""Adding an Antigravity account by Google OAuth (installed-app flow, paste-back; GEM-3, CRED-9).

The admin opens the authorize URL, signs in, and pastes the address the browser ended on
(``http://localhost:51121/oauth-callback?code=…&state=…``, where nothing listens). The code is
traded at Google's token endpoint (form-encoded, with the installed app's public client id and
secret, which are settings) for tokens; the email comes from the userinfo endpoint, and the project
from discovery.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from sublane_provider_antigravity._credentials import parse_credentials
from sublane_provider_antigravity._oauth import GoogleOAuth, error_code
from sublane_providers import ImportedCredentials, PkcePair, RefreshFailed, new_pkce_pair
from sublane_providers.kit import authorize_url

if TYPE_CHECKING:
    import httpx  # at run time: imported by the calls that use it (issue #49)

REDIRECT_URI = "http://localhost:51121/oauth-callback"
SCOPES = " ".join(
    "https://www.googleapis.com/auth/" + scope
    for scope in ("cloud-platform", "userinfo.email", "userinfo.profile", "cclog", "experimentsandconfigs")
)


class AntigravityLogin:
    """Google's installed-app login with the Antigravity client."""

    def __init__(
        self,
        oauth: GoogleOAuth,
        *,
        authorize: str,
        complete: Callable[[ImportedCredentials], Awaitable[ImportedCredentials]],
    ) -> None:
        self._oauth = oauth
        self._authorize = authorize
        self._complete = complete

    def start_login(self) -> tuple[str, str, PkcePair]:
        pkce = new_pkce_pair()
        state = secrets.token_urlsafe(24)
        url = authorize_url(
            self._authorize,
            {
                "access_type": "offline",
                "prompt": "consent",
                "response_type": "code",
                "client_id": self._oauth.client_id,
                "redirect_uri": REDIRECT_URI,
                "scope": SCOPES,
                "state": state,
                "code_challenge": pkce.challenge,
                "code_challenge_method": "S256",
            },
        )
        return url, state, pkce

    async def complete_login(self, code: str, state: str, pkce: PkcePair) -> ImportedCredentials:
        """Trade the code for tokens; the email and project are filled in by ``complete``."""
        response = await self._oauth.token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT_URI,
                "code_verifier": pkce.verifier,
            }
        )
        if response.status_code != 200:
            status = response.status_code
            raise RefreshFailed(
                error_code(response), permanent=400 <= status < 500 and status not in (408, 429)
            )
        payload = _payload(response)
        expires_in = payload.get("expires_in")
        lifetime = (
            float(expires_in)
            if isinstance(expires_in, int | float) and not isinstance(expires_in, bool)
            else 0
        )
        imported = parse_credentials(
            {
                "type": "antigravity",
                "access_token": payload.get("access_token"),
                "refresh_token": payload.get("refresh_token"),
                "expires_in": lifetime,
                "timestamp": time.time() * 1000,
            }
        )
        return await self._complete(imported)


def _payload(response: httpx.Response) -> Mapping[str, Any]:
    try:
        payload = response.json()
    except ValueError:
        raise RefreshFailed("invalid_token_response", permanent=True) from None
    if not isinstance(payload, dict) or not isinstance(payload.get("refresh_token"), str):
        raise RefreshFailed("invalid_token_response", permanent=True)
    return payload
