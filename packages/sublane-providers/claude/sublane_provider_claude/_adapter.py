"""The Claude adapter: Claude Pro/Max OAuth accounts serving the Anthropic Messages API (PROTOCOLS §2)."""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_claude._cache import CACHE_LIFETIME_S, cache_lifetime_s
from sublane_provider_claude._credentials import parse_credentials
from sublane_provider_claude._failures import classify_failure
from sublane_provider_claude._identity import ClaudeIdentity
from sublane_provider_claude._login import AUTHORIZE_URL, CLIENT_ID, ClaudeLogin
from sublane_provider_claude._quota import HEADER_PREFIX, remembered_windows_from_headers, windows_from_usage
from sublane_provider_claude._request import (
    CLAUDE_DIALECT,
    DEFAULT_ANTHROPIC_VERSION,
    OAUTH_BETA,
    count_tokens_url,
    messages_body,
    messages_url,
    upstream_headers,
)
from sublane_provider_claude._settings import ClaudeSettings
from sublane_provider_claude._stream import ClaudeStreamObserver
from sublane_provider_claude._vocabulary import VOCABULARY
from sublane_providers import (
    AccountIdentity,
    AliasesModels,
    CompletesImports,
    HasClientIdentity,
    ImportedCredentials,
    LoginFlow,
    MetadataHttp,
    ProviderAdapter,
    Quota,
    RefreshedCredentials,
    RefreshFailed,
    SignsIn,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
)
from sublane_providers.kit import oauth_retry_after, optional_text

if TYPE_CHECKING:
    import httpx  # at run time: imported by the calls that use it (issue #49)

_log = logging.getLogger("sublane.providers.claude")

MAX_MODEL_PAGES = 10

# Token-endpoint errors that mean the refresh token (or the login's code) is dead (CRED-6).
PERMANENT_REFRESH_CODES = frozenset({"invalid_grant"})

# There is no model-list endpoint for OAuth accounts (and the simulator offers none): the catalogue
# is the ids known to work with Claude subscriptions (PROTOCOLS §2.9), overridable per adapter.
KNOWN_MODELS: tuple[str, ...] = (
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
    "claude-fable-5-2",
    "claude-fable-5-1",
    "claude-fable-5",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-opus-4-5-20251101",
    "claude-haiku-4-5-20251001",
)

_SAFE_CODE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_DATED = re.compile(r"^(claude-[a-z0-9.-]+?)-(\d{8})$")


def aliases_of(models: Iterable[str]) -> frozenset[str]:
    """Anthropic's aliases of dated model ids (CAT-2): ``claude-sonnet-4-5-20250929`` is also
    ``claude-sonnet-4-5`` and ``claude-sonnet-4-5-latest``."""
    aliases: set[str] = set()
    for model in models:
        match = _DATED.match(model)
        if match:
            aliases.update((match.group(1), match.group(1) + "-latest"))
    return frozenset(aliases)


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


class ClaudeAdapter(ProviderAdapter, AliasesModels, CompletesImports, SignsIn, HasClientIdentity):
    """Talks to the Anthropic API and Claude's OAuth server for one SubLane process.

    Args:
        base_url: the API host (``https://api.anthropic.com``).
        auth_url: the OAuth token host (``https://platform.claude.com``; older clients used
            ``https://console.anthropic.com``).
        http: the shared HTTP client.
        metadata_timeout: timeout of token, usage and profile calls (TIME-3).
        authorize_url: where logins start (``https://claude.ai/oauth/authorize``).
        models: the built-in catalogue, used when the upstream's model list cannot be read
            (default :data:`KNOWN_MODELS`).
        models_fallback: whether that built-in catalogue stands in (``SUBLANE_CLAUDE_MODELS_FALLBACK``).
        clock: wall-clock seconds, to turn the token endpoint's ``expires_in`` into an expiry.
    """

    name = "claude"
    label = "Claude"
    credential_file = "~/.claude/.credentials.json"
    protocol = WireProtocol.MESSAGES
    dialect = CLAUDE_DIALECT
    operations = frozenset({UpstreamOperation.STREAM, UpstreamOperation.JSON, UpstreamOperation.COUNT_TOKENS})
    refresh_fallback = False
    fallback_models = frozenset(KNOWN_MODELS)
    cache_lifetime = CACHE_LIFETIME_S  # COST-4 (_cache.py)

    def cache_lifetime_s(self, body: Mapping[str, Any]) -> float:
        """Five minutes, or an hour when a breakpoint asks ``"ttl": "1h"``."""
        return cache_lifetime_s(body)

    # Claude Code shows its subscription limits from these (CLIENT-5): they reach it unchanged.
    native_reply_header_prefixes = (HEADER_PREFIX,)
    #: What its upstream is known to answer (CLIENT-7: anything else is reported); its catalogue
    #: lists the dated ids and their aliases.
    vocabulary = dataclasses.replace(VOCABULARY, models=fallback_models | aliases_of(KNOWN_MODELS))

    def __init__(
        self,
        *,
        base_url: str,
        auth_url: str,
        http: MetadataHttp,
        metadata_timeout: float,
        authorize_url: str = AUTHORIZE_URL,
        models: Iterable[str] = KNOWN_MODELS,
        models_fallback: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth_url = auth_url.rstrip("/")
        self.authorize_url = authorize_url
        self._http = http
        self._metadata_timeout = metadata_timeout
        self._models = tuple(models)
        self._models_fallback = models_fallback
        self._clock = clock
        self.identity = ClaudeIdentity()

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
    ) -> UpstreamRequest:
        headers["content-type"] = "application/json"
        headers["accept"] = accept
        content = json_dumps(payload)
        return UpstreamRequest("POST", url, headers, content)

    def build_request(
        self,
        operation: UpstreamOperation,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
        conversation_key: str | None = None,
    ) -> UpstreamRequest:
        if operation is UpstreamOperation.STREAM:
            return self.messages_stream_request(bundle, body, client_headers, bound=bound)
        if operation is UpstreamOperation.JSON:
            return self.json_request(bundle, body, client_headers, bound=bound)
        if operation is UpstreamOperation.COUNT_TOKENS:
            return self.count_tokens_request(bundle, body, client_headers)
        raise ValueError(f"claude cannot build a {operation} request")

    def messages_stream_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> UpstreamRequest:
        """``POST /v1/messages`` streaming (``stream: true`` forced) for the client's Messages body."""
        headers = upstream_headers(
            self.identified(client_headers), access_token=self.access(bundle), bound=bound
        )
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
    ) -> UpstreamRequest:
        """``POST /v1/messages`` answered as one JSON message (``stream: false``)."""
        headers = upstream_headers(
            self.identified(client_headers), access_token=self.access(bundle), bound=bound
        )
        payload = messages_body(body, model=str(body["model"]))
        payload["stream"] = False
        return self._post(self.messages_url, payload, headers, "application/json")

    def count_tokens_request(
        self, bundle: Mapping[str, Any], body: Mapping[str, Any], client_headers: Mapping[str, str]
    ) -> UpstreamRequest:
        """``POST /v1/messages/count_tokens`` for the client's body (never bound to a session)."""
        headers = upstream_headers(
            self.identified(client_headers), access_token=self.access(bundle), bound=False
        )
        payload = messages_body(body, model=str(body["model"]))
        return self._post(self.count_tokens_url, payload, headers, "application/json")

    def identified(self, client_headers: Mapping[str, str]) -> Mapping[str, str]:
        """The headers with a usable Claude Code identity: the client's, or else SubLane's (CLIENT-1).

        The gateway has already replaced the client's identity where it may not pass (a translated
        call, an old client); this fills in SubLane's where the call carries none at all.
        """
        if self.identity.client_version(client_headers) is None:
            return self.identity.replaced(client_headers)
        return client_headers

    def new_observer(self, state: StreamState | None = None) -> ClaudeStreamObserver:
        return ClaudeStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_failure(status, headers, body, now)

    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        return remembered_windows_from_headers(headers, now)  # parsed once per change (issue #19)

    # -- credentials ------------------------------------------------------------------------------

    @staticmethod
    def access(bundle: Mapping[str, Any]) -> str:
        """The OAuth access token of a bundle."""
        return str(bundle["access_token"])

    async def _token_call(self, payload: dict[str, str]) -> httpx.Response:
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        try:
            return await self._http.post(
                self.token_url,
                json=payload,
                headers={**self._own_agent(), "accept": "application/json"},
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

    def login(self) -> LoginFlow:
        return ClaudeLogin(
            authorize_url=self.authorize_url,
            token_call=self._token_call,
            token_payload=self._token_payload,
            expires_at=self._expires_at,
            error_code=_error_code,
            read_profile=self.read_profile,
        )

    async def complete_import(self, imported: ImportedCredentials) -> ImportedCredentials:
        """Claude credential files name no email: ask the profile endpoint (best effort)."""
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        if imported.identity.email:
            return imported
        try:
            profile = await self.read_profile(imported.bundle)
        except (httpx.HTTPError, ValueError) as exc:  # an expired token or a down endpoint
            _log.info("profile of an imported claude account unavailable: %s", type(exc).__name__)
            return imported
        identity = AccountIdentity(
            email=profile.email or imported.identity.email,
            plan=imported.identity.plan or profile.plan,
            subject=profile.subject or imported.identity.subject,
        )
        return dataclasses.replace(imported, identity=identity)

    # -- metadata ---------------------------------------------------------------------------------

    def _own_agent(self) -> dict[str, str]:
        """SubLane's Claude Code ``user-agent`` and ``x-app`` at the effective version (CLIENT-1)."""
        own = self.identity.headers()
        return {"user-agent": own["user-agent"], "x-app": own["x-app"]}

    def _metadata_headers(self, bundle: Mapping[str, Any]) -> dict[str, str]:
        return {
            **self._own_agent(),
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

    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
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
        """The account's models from the Anthropic API's ``GET /v1/models`` (CAT-1), page by page.

        Whether a subscription OAuth token may read that list is not documented
        (docs/claude-models.md): when it cannot (refused, unreachable, not a model list), the built-in
        list stands in while ``SUBLANE_CLAUDE_MODELS_FALLBACK`` is on (the default); with it off the
        discovery fails and the catalogue rules of CAT-1/CAT-4 apply.
        """
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        try:
            return await self._read_model_list(bundle)
        except (httpx.HTTPError, ValueError) as exc:
            if not self._models_fallback:
                raise
            detail = (
                f"HTTP {exc.response.status_code}"
                if isinstance(exc, httpx.HTTPStatusError)
                else type(exc).__name__
            )
            _log.info("Claude model list not readable (%s); using the built-in list", detail)
            return list(self._models)

    async def _read_model_list(self, bundle: Mapping[str, Any]) -> list[str]:
        headers = {**self._metadata_headers(bundle), "anthropic-version": DEFAULT_ANTHROPIC_VERSION}
        models: list[str] = []
        params: dict[str, str | int] = {"beta": "true", "limit": 1000}  # as Claude Code's SDK asks
        for _page in range(MAX_MODEL_PAGES):
            response = await self._http.get(
                f"{self.base_url}/v1/models", headers=headers, params=params, timeout=self._metadata_timeout
            )
            response.raise_for_status()
            payload = response.json()
            data = payload.get("data") if isinstance(payload, dict) else None
            if not isinstance(data, list):
                raise ValueError("/v1/models answered something other than a model list")
            models.extend(
                entry["id"] for entry in data if isinstance(entry, dict) and isinstance(entry.get("id"), str)
            )
            last = payload.get("last_id")
            if payload.get("has_more") is not True or not isinstance(last, str):
                break
            params = {"beta": "true", "limit": 1000, "after_id": last}
        if not models:
            raise ValueError("/v1/models listed no model")
        return models

    def model_aliases(self, models: frozenset[str]) -> frozenset[str]:
        return aliases_of(models) - models


def build_adapter(
    own: ClaudeSettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> ClaudeAdapter:
    """The Claude adapter of a gateway process, from its settings."""
    return ClaudeAdapter(
        base_url=own.claude_base_url,
        auth_url=own.claude_auth_url,
        http=transport.metadata,
        metadata_timeout=settings.metadata_timeout_s,
        authorize_url=own.claude_authorize_url,
        models_fallback=own.claude_models_fallback,
        clock=clock.time,
    )
