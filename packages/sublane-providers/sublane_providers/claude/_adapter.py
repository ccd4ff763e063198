"""The Claude adapter: Claude Pro/Max OAuth accounts serving the Anthropic Messages API (PROTOCOLS §2)."""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx

from sublane_core import signals
from sublane_providers._adapter import ProviderAdapter
from sublane_providers._credentials import (
    AccountIdentity,
    CredentialFormatError,
    ImportedCredentials,
    optional_text,
)
from sublane_providers._oauth import PkcePair, new_pkce_pair
from sublane_providers._oauth import authorize_url as build_authorize_url
from sublane_providers._refresh import RefreshedCredentials, RefreshFailed, oauth_retry_after
from sublane_providers._types import UpstreamFailure
from sublane_providers.claude._credentials import parse_credentials
from sublane_providers.claude._failures import classify_failure
from sublane_providers.claude._quota import windows_from_headers, windows_from_usage
from sublane_providers.claude._request import (
    OAUTH_BETA,
    count_tokens_url,
    messages_body,
    messages_url,
    upstream_headers,
)
from sublane_providers.claude._stream import ClaudeStreamObserver

CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"  # the public Claude Code OAuth client
AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
# The manual flow: the page shows CODE#STATE for the admin to paste back (no local listener).
REDIRECT_URI = "https://console.anthropic.com/oauth/code/callback"
SCOPES = "user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload"
# Token-endpoint errors that mean the refresh token (or the login's code) is dead (CRED-6).
PERMANENT_REFRESH_CODES = frozenset({"invalid_grant"})

# There is no model-list endpoint for OAuth accounts (and the simulator offers none): the catalogue
# is the ids known to work with Claude subscriptions (PROTOCOLS §2.9), overridable per adapter.
KNOWN_MODELS: tuple[str, ...] = (
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-fable-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-opus-4-5-20251101",
    "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5-20251001",
    "claude-opus-4-1-20250805",
    "claude-opus-4-20250514",
    "claude-sonnet-4-20250514",
    "claude-3-7-sonnet-20250219",
    "claude-3-5-haiku-20241022",
)

_SAFE_CODE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def _error_code(response: httpx.Response) -> str:
    """The token endpoint's error code (OAuth ``error`` or Anthropic ``error.type``), never free text."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    code: Any = None
    if isinstance(payload, dict):
        error = payload.get("error")
        code = error.get("type") if isinstance(error, dict) else error
    if isinstance(code, str) and _SAFE_CODE.match(code):
        return code
    return f"http_{response.status_code}"


def _plan_of(profile: Mapping[str, Any]) -> str | None:
    organization = profile.get("organization")
    if isinstance(organization, Mapping):
        kind = optional_text(organization, "organization_type", 64)
        if kind and kind.startswith("claude_"):
            return kind[len("claude_") :]
    account = profile.get("account")
    if isinstance(account, Mapping):
        if account.get("has_claude_max") is True:
            return "max"
        if account.get("has_claude_pro") is True:
            return "pro"
    return None


class ClaudeAdapter(ProviderAdapter):
    """Talks to the Anthropic API and Claude's OAuth server for one SubLane process.

    Args:
        base_url: the API host (``https://api.anthropic.com``).
        auth_url: the OAuth token host (``https://platform.claude.com``; older clients used
            ``https://console.anthropic.com``).
        http: the shared HTTP client.
        metadata_timeout: timeout of token, usage and profile calls (TIME-3).
        authorize_url: where logins start (``https://claude.ai/oauth/authorize``).
        models: the model catalogue :meth:`list_models` answers (default :data:`KNOWN_MODELS`).
        clock: wall-clock seconds, to turn the token endpoint's ``expires_in`` into an expiry.
    """

    name = "claude"
    refresh_fallback = False

    def __init__(
        self,
        *,
        base_url: str,
        auth_url: str,
        http: httpx.AsyncClient,
        metadata_timeout: float,
        authorize_url: str = AUTHORIZE_URL,
        models: Iterable[str] = KNOWN_MODELS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth_url = auth_url.rstrip("/")
        self.authorize_url = authorize_url
        self._http = http
        self._metadata_timeout = metadata_timeout
        self._models = tuple(models)
        self._clock = clock

    # -- endpoints --------------------------------------------------------------------------------

    @property
    def messages_url(self) -> str:
        return messages_url(self.base_url)

    @property
    def count_tokens_url(self) -> str:
        return count_tokens_url(self.base_url)

    @property
    def token_url(self) -> str:
        return f"{self.auth_url}/v1/oauth/token"

    # -- the adapter interface ----------------------------------------------------------------------

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return parse_credentials(data)

    def _post(
        self, url: str, payload: Mapping[str, Any], headers: dict[str, str], accept: str
    ) -> httpx.Request:
        headers["content-type"] = "application/json"
        headers["accept"] = accept
        content = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        return self._http.build_request("POST", url, content=content, headers=headers)

    def stream_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> httpx.Request:
        """``POST /v1/messages`` streaming (``stream: true`` forced) for the client's Messages body."""
        headers = upstream_headers(client_headers, access_token=self.access(bundle), bound=bound)
        payload = messages_body(body, model=str(body["model"]))
        payload["stream"] = True
        return self._post(self.messages_url, payload, headers, "text/event-stream")

    def json_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> httpx.Request:
        """``POST /v1/messages`` answered as one JSON message (``stream: false``)."""
        headers = upstream_headers(client_headers, access_token=self.access(bundle), bound=bound)
        payload = messages_body(body, model=str(body["model"]))
        payload["stream"] = False
        return self._post(self.messages_url, payload, headers, "application/json")

    def count_tokens_request(
        self, bundle: Mapping[str, Any], body: Mapping[str, Any], client_headers: Mapping[str, str]
    ) -> httpx.Request:
        """``POST /v1/messages/count_tokens`` for the client's body (never bound to a session)."""
        headers = upstream_headers(client_headers, access_token=self.access(bundle), bound=False)
        payload = messages_body(body, model=str(body["model"]))
        return self._post(self.count_tokens_url, payload, headers, "application/json")

    def new_observer(self) -> ClaudeStreamObserver:
        return ClaudeStreamObserver()

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
    def access(bundle: Mapping[str, Any]) -> str:
        """The OAuth access token of a bundle."""
        return str(bundle["access_token"])

    async def _token_call(self, payload: dict[str, str]) -> httpx.Response:
        try:
            return await self._http.post(
                self.token_url,
                json=payload,
                headers={"accept": "application/json"},
                timeout=self._metadata_timeout,
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None

    def _token_payload(self, response: httpx.Response) -> dict[str, Any]:
        try:
            payload = response.json()
        except ValueError:
            raise RefreshFailed("invalid_token_response", permanent=False) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("access_token"), str):
            raise RefreshFailed("invalid_token_response", permanent=False)
        return payload

    def _expires_at(self, payload: Mapping[str, Any]) -> float | None:
        expires_in = payload.get("expires_in")
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) and expires_in > 0:
            return self._clock() + float(expires_in)
        return None

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Trade the refresh token for new tokens. Refresh tokens rotate: persist before use.

        ``invalid_grant`` (400/401) is permanent (CRED-6); a 429 carries its ``Retry-After``
        (capped at 1 h); other answers, 5xx and network failures are transient.
        """
        response = await self._token_call(
            {
                "grant_type": "refresh_token",
                "refresh_token": str(bundle["refresh_token"]),
                "client_id": CLIENT_ID,
            }
        )
        if response.status_code != 200:
            code = _error_code(response)
            permanent = response.status_code in (400, 401) and code in PERMANENT_REFRESH_CODES
            retry_after = oauth_retry_after(response.headers, self._clock())
            raise RefreshFailed(code, permanent=permanent, retry_after=retry_after)
        payload = self._token_payload(response)
        merged = dict(bundle)
        merged["access_token"] = payload["access_token"]
        if isinstance(payload.get("refresh_token"), str) and payload["refresh_token"]:
            merged["refresh_token"] = payload["refresh_token"]  # kept when the answer omits it
        scope = payload.get("scope")
        if isinstance(scope, str) and scope:
            merged["scopes"] = scope.split()
        expires_at = self._expires_at(payload)
        merged["expires_at"] = expires_at
        return RefreshedCredentials(bundle=merged, expires_at=expires_at)

    # -- login ------------------------------------------------------------------------------------

    def start_login(self) -> tuple[str, str, PkcePair]:
        """``(authorize_url, state, pkce)`` for a PKCE login of a Claude Pro/Max account.

        The redirect is Claude's manual page, which shows ``CODE#STATE`` to paste back.
        """
        pkce = new_pkce_pair()
        state = secrets.token_urlsafe(24)
        url = build_authorize_url(
            self.authorize_url,
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
            raise RefreshFailed(_error_code(response), permanent=permanent)
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
            profile = await self.read_profile(imported.bundle)
        except (httpx.HTTPError, ValueError):
            profile = AccountIdentity()  # the login stands without it; the plan shows up later
        identity = AccountIdentity(
            email=profile.email or identity.email,
            plan=profile.plan,
            subject=profile.subject or identity.subject,
        )
        bundle = dict(imported.bundle, subscription_type=profile.plan)
        return ImportedCredentials(provider="claude", bundle=bundle, expires_at=expires_at, identity=identity)

    # -- metadata ---------------------------------------------------------------------------------

    def _metadata_headers(self, bundle: Mapping[str, Any]) -> dict[str, str]:
        return {
            "authorization": f"Bearer {self.access(bundle)}",
            "anthropic-beta": OAUTH_BETA,
            "accept": "application/json",
        }

    async def _get_object(self, bundle: Mapping[str, Any], path: str) -> dict[str, Any]:
        response = await self._http.get(
            f"{self.base_url}{path}",
            headers=self._metadata_headers(bundle),
            timeout=self._metadata_timeout,
        )
        response.raise_for_status()
        payload = response.json()
        if not isinstance(payload, dict):
            raise ValueError(f"{path} answered something other than an object")
        return payload

    async def read_quota(
        self, bundle: Mapping[str, Any], now: float
    ) -> tuple[str | None, tuple[signals.QuotaWindow, ...]]:
        """The account's subscription windows from ``GET /api/oauth/usage``; the plan from the bundle."""
        payload = await self._get_object(bundle, "/api/oauth/usage")
        _, windows = windows_from_usage(payload, now)
        plan = bundle.get("subscription_type")
        return (plan if isinstance(plan, str) and plan else None), windows

    async def read_profile(self, bundle: Mapping[str, Any]) -> AccountIdentity:
        """Who the account is, from ``GET /api/oauth/profile``: email, plan, account uuid."""
        payload = await self._get_object(bundle, "/api/oauth/profile")
        account = payload.get("account")
        account = account if isinstance(account, Mapping) else {}
        return AccountIdentity(
            email=optional_text(account, "email"),
            plan=_plan_of(payload),
            subject=optional_text(account, "uuid"),
        )

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """The configured catalogue (there is no model-list endpoint for OAuth accounts)."""
        return list(self._models)
