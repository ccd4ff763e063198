"""The Codex adapter: ChatGPT-login accounts serving the OpenAI Responses protocol (PROTOCOLS §1)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

import httpx

from sublane_core import signals
from sublane_providers._adapter import ProviderAdapter
from sublane_providers._credentials import CredentialFormatError, ImportedCredentials
from sublane_providers._jwt import expiry_of
from sublane_providers._oauth import PkcePair, authorize_url, new_pkce_pair
from sublane_providers._refresh import RefreshedCredentials, RefreshFailed, oauth_retry_after
from sublane_providers._types import UpstreamFailure
from sublane_providers.codex._credentials import parse_credentials
from sublane_providers.codex._failures import classify_failure
from sublane_providers.codex._quota import windows_from_headers, windows_from_usage
from sublane_providers.codex._request import compact_body, responses_body, upstream_headers
from sublane_providers.codex._stream import CodexStreamObserver

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"  # the public Codex CLI OAuth client
REDIRECT_URI = "http://localhost:1455/auth/callback"
SCOPES = "openid profile email offline_access"
CLIENT_VERSION = "0.171.0"
# Token-endpoint codes that mean the refresh token is dead: re-authorization is required (CRED-6).
PERMANENT_REFRESH_CODES = frozenset(
    {"refresh_token_expired", "refresh_token_reused", "refresh_token_invalidated", "invalid_grant"}
)


def _error_code(body: bytes) -> str | None:
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return str(error["code"])
    if isinstance(error, str):
        return error
    code = payload.get("code")
    return code if isinstance(code, str) else None


class CodexAdapter(ProviderAdapter):
    """Talks to the Codex backend and the OpenAI OAuth server for one SubLane process."""

    name = "codex"
    refresh_fallback = True

    def __init__(
        self, *, base_url: str, auth_url: str, http: httpx.AsyncClient, metadata_timeout: float
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth_url = auth_url.rstrip("/")
        self._http = http
        self._metadata_timeout = metadata_timeout

    # -- endpoints --------------------------------------------------------------------------------

    @property
    def responses_url(self) -> str:
        return f"{self.base_url}/codex/responses"

    @property
    def websocket_url(self) -> str:
        url = self.responses_url
        return "ws" + url[4:] if url.startswith("http") else url

    @property
    def compact_url(self) -> str:
        return f"{self.base_url}/codex/responses/compact"

    # -- the adapter interface ----------------------------------------------------------------------

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return parse_credentials(data)

    def stream_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> httpx.Request:
        token, account_id = self.access(bundle)
        headers = upstream_headers(client_headers, access_token=token, account_id=account_id, bound=bound)
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream"
        payload = responses_body(body, model=str(body["model"]))
        content = json.dumps(payload, separators=(",", ":")).encode()
        return self._http.build_request("POST", self.responses_url, content=content, headers=headers)

    def compact_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> httpx.Request:
        """A remote compaction request: plain JSON in and out (PROTOCOLS §1.7)."""
        token, account_id = self.access(bundle)
        headers = upstream_headers(client_headers, access_token=token, account_id=account_id, bound=bound)
        headers["content-type"] = headers["accept"] = "application/json"
        content = json.dumps(compact_body(body, model=str(body["model"])), separators=(",", ":")).encode()
        return self._http.build_request("POST", self.compact_url, content=content, headers=headers)

    def new_observer(self) -> CodexStreamObserver:
        return CodexStreamObserver()

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_failure(status, headers, body, now)

    def quota_from_headers(
        self, headers: Mapping[str, str], now: float
    ) -> tuple[str | None, tuple[signals.QuotaWindow, ...]]:
        return windows_from_headers(headers, now)

    # -- credentials ------------------------------------------------------------------------------

    @staticmethod
    def access(bundle: Mapping[str, Any]) -> tuple[str, str | None]:
        """``(access_token, chatgpt_account_id)`` of a bundle."""
        return str(bundle["access_token"]), bundle.get("account_id")

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Trade the refresh token for new tokens. Refresh tokens rotate: persist before use."""
        try:
            response = await self._http.post(
                f"{self.auth_url}/oauth/token",
                json={
                    "client_id": CLIENT_ID,
                    "grant_type": "refresh_token",
                    "refresh_token": bundle["refresh_token"],
                },
                timeout=self._metadata_timeout,
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None
        if response.status_code != 200:
            code = _error_code(response.content) or f"http_{response.status_code}"
            permanent = response.status_code in (400, 401) and code in PERMANENT_REFRESH_CODES
            retry_after = oauth_retry_after(response.headers, time.time())
            raise RefreshFailed(code[:64], permanent=permanent, retry_after=retry_after)
        return self._merge_tokens(bundle, response)

    def _merge_tokens(self, bundle: Mapping[str, Any], response: httpx.Response) -> RefreshedCredentials:
        try:
            payload = response.json()
        except ValueError:
            raise RefreshFailed("invalid_token_response", permanent=False) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("access_token"), str):
            raise RefreshFailed("invalid_token_response", permanent=False)
        merged = dict(bundle)
        merged["access_token"] = payload["access_token"]
        for key in ("refresh_token", "id_token"):  # kept when the answer omits them
            if isinstance(payload.get(key), str) and payload[key]:
                merged[key] = payload[key]
        expires_at = expiry_of(merged["access_token"])
        return RefreshedCredentials(bundle=merged, expires_at=expires_at)

    # -- login ------------------------------------------------------------------------------------

    def start_login(self) -> tuple[str, str, PkcePair]:
        """``(authorize_url, state, pkce)`` for a PKCE login of a ChatGPT account."""
        pkce = new_pkce_pair()
        state = secrets.token_urlsafe(24)
        url = authorize_url(
            f"{self.auth_url}/oauth/authorize",
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
        try:
            response = await self._http.post(
                f"{self.auth_url}/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": CLIENT_ID,
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "code_verifier": pkce.verifier,
                },
                timeout=self._metadata_timeout,
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None
        if response.status_code != 200:
            code_name = _error_code(response.content) or f"http_{response.status_code}"
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

    # -- metadata ---------------------------------------------------------------------------------

    def _metadata_headers(self, bundle: Mapping[str, Any]) -> dict[str, str]:
        token, account_id = self.access(bundle)
        headers = {"authorization": f"Bearer {token}", "originator": "codex_cli_rs"}
        if account_id:
            headers["chatgpt-account-id"] = account_id
        return headers

    async def read_quota(
        self, bundle: Mapping[str, Any], now: float
    ) -> tuple[str | None, tuple[signals.QuotaWindow, ...]]:
        """The account's subscription windows from ``GET /wham/usage``."""
        response = await self._http.get(
            f"{self.base_url}/wham/usage",
            headers=self._metadata_headers(bundle),
            timeout=self._metadata_timeout,
        )
        response.raise_for_status()
        payload = response.json()
        if not isinstance(payload, dict):
            raise ValueError("wham/usage answered something other than an object")
        return windows_from_usage(payload, now)

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """Model slugs the account may use, from ``GET /codex/models``."""
        response = await self._http.get(
            f"{self.base_url}/codex/models",
            params={"client_version": CLIENT_VERSION},
            headers=self._metadata_headers(bundle),
            timeout=self._metadata_timeout,
        )
        response.raise_for_status()
        payload = response.json()
        models = payload.get("models") if isinstance(payload, dict) else None
        if not isinstance(models, list):
            raise ValueError("codex/models answered no model list")
        return [
            str(item["slug"])
            for item in models
            if isinstance(item, dict) and isinstance(item.get("slug"), str)
        ]
