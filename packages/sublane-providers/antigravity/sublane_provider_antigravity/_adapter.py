"""The Antigravity adapter: Google accounts serving Gemini (and Claude) models through ``v1internal``.

The upstream protocol is Gemini's ``generateContent`` inside Antigravity's wrapper (PROTOCOLS §3):
requests carry ``project`` (discovered with ``:loadCodeAssist``, provisioned with ``:onboardUser``,
stored in the account's credential bundle), stream chunks wrap each response in ``{"response": …}``
(:meth:`unwrap_event` gives a Gemini client the bare responses). Several hosts may be configured;
a "no capacity" 503 or a connection failure before any output moves to the next one (GEM-4).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_antigravity._cache import CACHE_LIFETIME_S
from sublane_provider_antigravity._client_names import GEMINI_CLI_NAMES
from sublane_provider_antigravity._credentials import parse_credentials
from sublane_provider_antigravity._failures import classify_failure, no_capacity
from sublane_provider_antigravity._identity import AntigravityIdentity
from sublane_provider_antigravity._login import AntigravityLogin
from sublane_provider_antigravity._oauth import GoogleOAuth
from sublane_provider_antigravity._project import ProjectUnavailable, discover_project
from sublane_provider_antigravity._quota import models_of, windows_from_models
from sublane_provider_antigravity._request import hosts_of, upstream_headers, wrapped_body
from sublane_provider_antigravity._settings import AntigravitySettings
from sublane_provider_antigravity._stream import AntigravityStreamObserver, unwrap
from sublane_provider_antigravity._vocabulary import VOCABULARY
from sublane_providers import (
    AccountIdentity,
    CompletesBundles,
    CompletesImports,
    HasClientIdentity,
    HasOtherHosts,
    ImportedCredentials,
    LoginFlow,
    MetadataHttp,
    ProviderAdapter,
    Quota,
    RefreshedCredentials,
    RefreshFailed,
    SignsIn,
    StreamState,
    SuggestsAliases,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
    WrapsEvents,
)

_log = logging.getLogger("sublane.providers.antigravity")

_PER_HOST_HEADERS = frozenset({"host", "content-length"})  # not carried to the next host (GEM-4)
# What Antigravity accounts are known to serve (PROTOCOLS §3.9); stands in while discovery fails.
KNOWN_MODELS = frozenset(
    {
        "claude-opus-4-6-thinking",
        "claude-sonnet-4-6",
        "gemini-3-flash",
        "gemini-3-pro-high",
        "gemini-3-pro-low",
        "gemini-3.1-flash-image",
        "gemini-3.1-pro-high",
        "gemini-3.1-pro-low",
        "gemini-3.1-flash-lite",
        "gpt-oss-120b-medium",
    }
)
_PATHS = {
    UpstreamOperation.STREAM: ("/v1internal:streamGenerateContent?alt=sse", "text/event-stream"),
    UpstreamOperation.JSON: ("/v1internal:generateContent", "application/json"),
    UpstreamOperation.COUNT_TOKENS: ("/v1internal:countTokens", "application/json"),
}


class AntigravityAdapter(
    ProviderAdapter,
    CompletesBundles,
    CompletesImports,
    HasClientIdentity,
    HasOtherHosts,
    SignsIn,
    SuggestsAliases,
    WrapsEvents,
):
    """Talks to cloudcode-pa and Google's OAuth server for one SubLane process."""

    name = "antigravity"
    label = "Antigravity (Google)"
    credential_file = "an Antigravity token JSON or a Google OAuth credential file"
    subject_label = "project"  # the Code Assist project, which admins look for
    protocol = WireProtocol.GEMINI
    operations = frozenset(_PATHS)
    refresh_fallback = False  # plain validity (GEM-3)
    fallback_models = KNOWN_MODELS
    cache_lifetime = CACHE_LIFETIME_S  # COST-4 (_cache.py)
    #: What its upstream is known to answer (CLIENT-7: anything else is reported).
    vocabulary = VOCABULARY

    def __init__(
        self,
        *,
        base_url: str,
        http: MetadataHttp,
        oauth: GoogleOAuth,
        authorize_url: str,
        metadata_timeout: float,
    ) -> None:
        self.hosts = hosts_of(base_url)
        self._http = http
        self._oauth = oauth
        self._authorize_url = authorize_url
        self._metadata_timeout = metadata_timeout
        self.identity = AntigravityIdentity()

    # -- credentials ------------------------------------------------------------------------------

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return parse_credentials(data)

    def bundle_complete(self, bundle: Mapping[str, Any]) -> bool:
        return bool(bundle.get("project_id"))

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """A fresh access token, and the project when the bundle has none yet (GEM-1)."""
        refreshed = await self._oauth.refresh(bundle)
        merged = await self._with_project(refreshed.bundle)
        return RefreshedCredentials(bundle=merged, expires_at=refreshed.expires_at)

    async def _with_project(self, bundle: Mapping[str, Any]) -> dict[str, Any]:
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        merged = dict(bundle)
        if merged.get("project_id"):
            return merged
        try:
            project, tier = await discover_project(
                self._http,
                self.hosts[-1],
                str(merged["access_token"]),
                timeout_s=self._metadata_timeout,
                identity=self.identity.headers(),
            )
        except (httpx.HTTPError, ValueError, ProjectUnavailable) as exc:
            raise RefreshFailed(f"project:{type(exc).__name__}", permanent=False) from None
        merged["project_id"], merged["tier"] = project, tier
        return merged

    async def complete_import(self, imported: ImportedCredentials) -> ImportedCredentials:
        """Fill in the project (and the email) of an imported or newly signed-in account.

        Best effort: an account whose project cannot be found now gets it on its first use (the
        vault refreshes a bundle that is not :meth:`bundle_complete`).
        """
        bundle: dict[str, Any] = dict(imported.bundle)
        expires_at = imported.expires_at
        try:
            if _needs_token(bundle):
                refreshed = await self._oauth.refresh(bundle)
                bundle, expires_at = dict(refreshed.bundle), refreshed.expires_at
            bundle = await self._with_project(bundle)
        except RefreshFailed as failure:
            _log.info("antigravity account not completed at import: %s", failure.code)
            return dataclasses.replace(imported, bundle=bundle, expires_at=expires_at)
        email = imported.identity.email or await self._oauth.email_of(str(bundle["access_token"]))
        bundle["email"] = email
        identity = AccountIdentity(email=email, plan=bundle.get("tier"), subject=bundle.get("project_id"))
        return dataclasses.replace(imported, bundle=bundle, expires_at=expires_at, identity=identity)

    def login(self) -> LoginFlow:
        return AntigravityLogin(self._oauth, authorize=self._authorize_url, complete=self.complete_import)

    # -- requests ---------------------------------------------------------------------------------

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
        path, accept = _PATHS[operation]
        model = str(body["model"])
        key = conversation_key if bound else None
        if operation is UpstreamOperation.COUNT_TOKENS:
            nested = body.get("generateContentRequest")
            counted = nested if isinstance(nested, dict) else _without_model(body)
            payload: dict[str, Any] = {"request": {"model": f"models/{model}", **counted}}
        else:
            payload = wrapped_body(
                body, project=str(bundle.get("project_id") or ""), model=model, conversation_key=key
            )
        content = json_dumps(payload, errors="surrogatepass")
        identity = self.identity.carried(client_headers)  # CLIENT-1: the client's only when usable
        headers = upstream_headers(str(bundle["access_token"]), accept=accept, identity=identity)
        return UpstreamRequest("POST", self.hosts[0] + path, headers, content)

    def next_host(self, request: UpstreamRequest, failure: UpstreamFailure | None) -> UpstreamRequest | None:
        """The same request on the next configured host, after a connection failure (``failure``
        is ``None``) or a "no capacity" answer before any output (GEM-4)."""
        if failure is not None and not no_capacity(failure):
            return None
        url = request.url
        for position, host in enumerate(self.hosts[:-1]):
            if url.startswith(host + "/"):
                moved = self.hosts[position + 1] + url[len(host) :]
                # Host and Content-Length are the request's own: the new host gets its name.
                headers = {k: v for k, v in request.headers.items() if k not in _PER_HOST_HEADERS}
                return request.to(moved, headers)
        return None

    def new_observer(self, state: StreamState | None = None) -> AntigravityStreamObserver:
        return AntigravityStreamObserver(state)

    def default_aliases(self) -> Mapping[str, str]:
        """The Gemini CLI's names for Antigravity's models (ALIAS-1, ``_client_names``)."""
        return GEMINI_CLI_NAMES

    def unwrap_event(self, payload: dict[str, Any]) -> dict[str, Any]:
        return unwrap(payload)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_failure(status, headers, body, now)

    # -- metadata ---------------------------------------------------------------------------------

    async def _available_models(self, bundle: Mapping[str, Any]) -> Mapping[str, Any]:
        """``:fetchAvailableModels`` on the first host that answers (GEM-4 holds for metadata too)."""
        import httpx  # here, not at import: a default start makes no metadata call (issue #49)

        for position, host in enumerate(self.hosts):
            try:
                response = await self._http.post(
                    f"{host}/v1internal:fetchAvailableModels",
                    json={"project": bundle.get("project_id")} if bundle.get("project_id") else {},
                    headers=upstream_headers(
                        str(bundle["access_token"]),
                        accept="application/json",
                        identity=self.identity.headers(),
                    ),
                    timeout=self._metadata_timeout,
                )
            except httpx.TransportError:
                if position == len(self.hosts) - 1:
                    raise
                continue
            break
        response.raise_for_status()
        payload = response.json()
        if not isinstance(payload, dict):
            raise ValueError("fetchAvailableModels answered something other than an object")
        return payload

    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
        """Per-model quota windows from ``:fetchAvailableModels`` (QUOTA-4: per exact model)."""
        payload = await self._available_models(bundle)
        plan = bundle.get("tier")
        return (plan if isinstance(plan, str) and plan else None), windows_from_models(payload)

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """The account's native model ids, from ``:fetchAvailableModels`` (CAT-1)."""
        return sorted(models_of(await self._available_models(bundle)))

    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        return None, ()  # Antigravity reports no quota on inference answers (PROTOCOLS §4)


def _needs_token(bundle: Mapping[str, Any]) -> bool:
    """Whether a refresh must mint an access token (none yet, or due within 2 minutes)."""
    expires_at = bundle.get("expires_at")
    if not bundle.get("access_token"):
        return True
    return isinstance(expires_at, int | float) and expires_at - time.time() <= 120


def _without_model(body: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != "model"}


def build_adapter(
    own: AntigravitySettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> AntigravityAdapter:
    """The Antigravity adapter of a gateway process, from its settings."""
    oauth = GoogleOAuth(
        transport.metadata,
        token_url=own.google_auth_url.rstrip("/") + "/token",
        userinfo_url=own.google_userinfo_url,
        client_id=own.google_client_id,
        client_secret=own.google_client_secret.get_secret_value(),
        timeout=settings.metadata_timeout_s,
    )
    return AntigravityAdapter(
        base_url=own.antigravity_base_url,
        http=transport.metadata,
        oauth=oauth,
        authorize_url=own.google_authorize_url,
        metadata_timeout=settings.metadata_timeout_s,
    )
