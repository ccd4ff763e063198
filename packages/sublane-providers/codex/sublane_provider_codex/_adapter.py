"""The Codex adapter: ChatGPT-login accounts serving the OpenAI Responses protocol (PROTOCOLS §1)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_codex._cache import CACHE_LIFETIME_S
from sublane_provider_codex._credentials import parse_credentials
from sublane_provider_codex._errors import error_code
from sublane_provider_codex._failures import classify_failure
from sublane_provider_codex._identity import BUILT_IN_VERSION, CodexIdentity
from sublane_provider_codex._login import CLIENT_ID, CodexLogin
from sublane_provider_codex._quota import (
    remembered_windows_from_headers,
    windows_from_rate_limits_event,
    windows_from_usage,
)
from sublane_provider_codex._request import CODEX_DIALECT, compact_body, responses_body, upstream_headers
from sublane_provider_codex._session import open_codex_session
from sublane_provider_codex._settings import CodexSettings
from sublane_provider_codex._stream import CodexStreamObserver
from sublane_provider_codex._vocabulary import VOCABULARY
from sublane_providers import (
    HasClientIdentity,
    ImportedCredentials,
    LoginFlow,
    MetadataHttp,
    OpensSessions,
    ProviderAdapter,
    Quota,
    RefreshedCredentials,
    RefreshFailed,
    ReportsQuotaInStream,
    SignsIn,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
    UpstreamSession,
    expiry_of,
)
from sublane_providers.kit import oauth_retry_after

if TYPE_CHECKING:
    import httpx  # at run time: imported by the calls that use it (issue #49)

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_COMPACT, _STREAM = UpstreamOperation.COMPACT, UpstreamOperation.STREAM

CLIENT_VERSION = BUILT_IN_VERSION  # the built-in identity version (CLIENT-2: see CodexIdentity)
# Token-endpoint codes that mean the refresh token is dead: re-authorization is required (CRED-6).
PERMANENT_REFRESH_CODES = frozenset(
    {"refresh_token_expired", "refresh_token_reused", "refresh_token_invalidated", "invalid_grant"}
)
# What ChatGPT accounts are known to serve (PROTOCOLS §1.8); stands in while discovery fails.
KNOWN_MODELS = frozenset(
    [
        "gpt-5",
        "gpt-5-codex",
        "gpt-5.2",
        "gpt-5.3-codex",
        "gpt-5.3-codex-spark",
        "gpt-5.4",
        "gpt-5.4-mini",
        "gpt-5.5",
        "gpt-5.6-sol",
        "gpt-5.6-terra",
        "gpt-5.6-luna",
        # what the Codex CLI 0.171.0's bundled catalogue lists (its default is gpt-6.2-sol)
        "gpt-6-sol",
        "gpt-6-luna",
        "gpt-6-astra",
        "gpt-6.1-sol",
        "gpt-6.1-terra",
        "gpt-6.2-sol",
        "gpt-6.2-astra",
        "codex-auto-review",
    ]
)


class CodexAdapter(ProviderAdapter, OpensSessions, ReportsQuotaInStream, SignsIn, HasClientIdentity):
    """Talks to the Codex backend and the OpenAI OAuth server for one SubLane process."""

    name = "codex"
    label = "ChatGPT / Codex"
    credential_file = "~/.codex/auth.json"
    protocol = WireProtocol.RESPONSES
    dialect = CODEX_DIALECT
    operations = frozenset({_STREAM, _COMPACT})
    refresh_fallback = True
    json_from_stream = True  # the backend only streams: JSON answers are collected from the stream
    quota_events = frozenset({"codex.rate_limits"})
    fallback_models = KNOWN_MODELS
    cache_lifetime = CACHE_LIFETIME_S  # COST-4 (_cache.py)
    #: What its upstream is known to answer (CLIENT-7: anything else is reported).
    vocabulary = VOCABULARY

    def __init__(self, *, base_url: str, auth_url: str, http: MetadataHttp, metadata_timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth_url = auth_url.rstrip("/")
        self._http = http
        self._metadata_timeout = metadata_timeout
        self.identity = CodexIdentity()
        self._login = CodexLogin(
            auth_url=self.auth_url, http=http, timeout=metadata_timeout, identity=self.identity
        )

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
        if operation is _COMPACT:
            return self.compact_request(bundle, body, client_headers, bound=bound)
        if operation is not _STREAM:
            raise ValueError(f"codex cannot build a {operation} request")
        token, account_id = self.access(bundle)
        headers = upstream_headers(
            self.identified(client_headers), access_token=token, account_id=account_id, bound=bound
        )
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream"
        payload = responses_body(body, model=str(body["model"]))
        content = json_dumps(payload, ensure_ascii=True)
        return UpstreamRequest("POST", self.responses_url, headers, content)

    def compact_request(
        self,
        bundle: Mapping[str, Any],
        body: Mapping[str, Any],
        client_headers: Mapping[str, str],
        *,
        bound: bool,
    ) -> UpstreamRequest:
        """A remote compaction request: plain JSON in and out (PROTOCOLS §1.7)."""
        token, account_id = self.access(bundle)
        headers = upstream_headers(
            self.identified(client_headers), access_token=token, account_id=account_id, bound=bound
        )
        headers["content-type"] = headers["accept"] = "application/json"
        content = json_dumps(compact_body(body, model=str(body["model"])), ensure_ascii=True)
        return UpstreamRequest("POST", self.compact_url, headers, content)

    async def open_session(
        self, bundle: Mapping[str, Any], client_headers: Mapping[str, str], *, open_timeout: float
    ) -> UpstreamSession:
        token, account_id = self.access(bundle)
        return await open_codex_session(
            self.websocket_url,
            access_token=token,
            account_id=account_id,
            client_headers=self.identified(client_headers),
            open_timeout=open_timeout,
            now=time.time(),
        )

    def identified(self, client_headers: Mapping[str, str]) -> Mapping[str, str]:
        """The headers with a usable Codex identity: the client's, or else SubLane's (CLIENT-1).

        The gateway has already replaced the client's identity where it may not pass (a translated
        call, an old client); this fills in SubLane's where the call carries none at all.
        """
        if self.identity.client_version(client_headers) is None:
            return self.identity.replaced(client_headers)
        return client_headers

    def new_observer(self, state: StreamState | None = None) -> CodexStreamObserver:
        return CodexStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_failure(status, headers, body, now)

    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        return remembered_windows_from_headers(headers, now)  # parsed once per change (issue #19)

    def quota_from_event(self, payload: Mapping[str, Any], now: float) -> Quota:
        return windows_from_rate_limits_event(payload)

    # -- credentials ------------------------------------------------------------------------------

    @staticmethod
    def access(bundle: Mapping[str, Any]) -> tuple[str, str | None]:
        """``(access_token, chatgpt_account_id)`` of a bundle."""
        return str(bundle["access_token"]), bundle.get("account_id")

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Trade the refresh token for new tokens. Refresh tokens rotate: persist before use."""
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        try:
            response = await self._http.post(
                f"{self.auth_url}/oauth/token",
                json={
                    "client_id": CLIENT_ID,
                    "grant_type": "refresh_token",
                    "refresh_token": bundle["refresh_token"],
                },
                headers=self.identity.headers(),  # CLIENT-1: refresh carries SubLane's identity
                timeout=self._metadata_timeout,
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None
        if response.status_code != 200:
            code = error_code(response.content) or f"http_{response.status_code}"
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

    def login(self) -> LoginFlow:
        return self._login

    # -- metadata ---------------------------------------------------------------------------------

    def _metadata_headers(self, bundle: Mapping[str, Any]) -> dict[str, str]:
        token, account_id = self.access(bundle)
        headers = {**self.identity.headers(), "authorization": f"Bearer {token}"}
        if account_id:
            headers["chatgpt-account-id"] = account_id
        return headers

    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
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
            params={"client_version": self.identity.effective},
            headers=self._metadata_headers(bundle),
            timeout=self._metadata_timeout,
        )
        response.raise_for_status()
        payload = response.json()
        models = payload.get("models") if isinstance(payload, dict) else None
        if not isinstance(models, list):
            raise ValueError("codex/models answered no model list")
        listed = [item for item in models if isinstance(item, dict) and isinstance(item.get("slug"), str)]
        # CLIENT-3: a model's ``minimal_client_version`` is refused before any call above the
        # effective version (the floor is the model's, whichever account listed it).
        self.identity.note_floors(
            {str(item["slug"]): str(item.get("minimal_client_version") or "") for item in listed}
        )
        return [str(item["slug"]) for item in listed]


def build_adapter(
    own: CodexSettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> CodexAdapter:
    """The Codex adapter of a gateway process, from its settings."""
    return CodexAdapter(
        base_url=own.codex_base_url,
        auth_url=own.openai_auth_url,
        http=transport.metadata,
        metadata_timeout=settings.metadata_timeout_s,
    )
