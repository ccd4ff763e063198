"""Google's OAuth token endpoint, as the Antigravity client uses it (PROTOCOLS §3.8).

Form-encoded; refresh tokens do not rotate (the old one is kept when the answer omits it).
``invalid_grant`` is permanent (CRED-6); ``invalid_client`` is a configuration problem of the
shared client, never a reason to mark the account for re-authorization.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sublane_providers import MetadataHttp, RefreshedCredentials, RefreshFailed
from sublane_providers.kit import oauth_retry_after

if TYPE_CHECKING:
    import httpx  # at run time: imported by the calls that use it (issue #49)

PERMANENT_CODES = frozenset({"invalid_grant"})
_SAFE_CODE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def error_code(response: httpx.Response) -> str:
    """The OAuth ``error`` of an answer, never free text."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    code = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(code, dict):
        code = code.get("status")
    if isinstance(code, str) and _SAFE_CODE.match(code):
        return code
    return f"http_{response.status_code}"


class GoogleOAuth:
    """The token endpoint and userinfo of one Google OAuth client."""

    def __init__(
        self,
        http: MetadataHttp,
        *,
        token_url: str,
        userinfo_url: str,
        client_id: str,
        client_secret: str,
        timeout: float,
    ) -> None:
        self._http = http
        self.token_url = token_url
        self.userinfo_url = userinfo_url
        self.client_id = client_id
        self._client_secret = client_secret
        self._timeout = timeout

    async def token(self, form: Mapping[str, str]) -> httpx.Response:
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        data = {**form, "client_id": self.client_id, "client_secret": self._client_secret}
        try:
            return await self._http.post(
                self.token_url, data=data, headers={"accept": "application/json"}, timeout=self._timeout
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        response = await self.token(
            {"grant_type": "refresh_token", "refresh_token": str(bundle["refresh_token"])}
        )
        if response.status_code != 200:
            code = error_code(response)
            permanent = response.status_code in (400, 401) and code in PERMANENT_CODES
            raise RefreshFailed(
                code, permanent=permanent, retry_after=oauth_retry_after(response.headers, time.time())
            )
        try:
            payload = response.json()
        except ValueError:
            raise RefreshFailed("invalid_token_response", permanent=False) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("access_token"), str):
            raise RefreshFailed("invalid_token_response", permanent=False)
        merged = dict(bundle)
        merged["access_token"] = payload["access_token"]
        if isinstance(payload.get("refresh_token"), str) and payload["refresh_token"]:
            merged["refresh_token"] = payload["refresh_token"]
        expires_in = payload.get("expires_in")
        expires_at = None
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
            expires_at = time.time() + float(expires_in)
        merged["expires_at"] = expires_at
        return RefreshedCredentials(bundle=merged, expires_at=expires_at)

    async def email_of(self, access_token: str) -> str | None:
        """The account's email from the userinfo endpoint (``None`` when it cannot tell)."""
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        try:
            response = await self._http.get(
                self.userinfo_url, headers={"authorization": f"Bearer {access_token}"}, timeout=self._timeout
            )
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        try:
            payload = response.json()
        except ValueError:
            return None
        email = payload.get("email") if isinstance(payload, dict) else None
        return email[:256] if isinstance(email, str) and email else None
