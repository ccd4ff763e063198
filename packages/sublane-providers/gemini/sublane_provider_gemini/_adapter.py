"""The gemini adapter: Gemini API keys (metered), ``generateContent`` unwrapped (PAID-1).

A key is sent as ``x-goog-api-key`` to ``{base_url}/v1beta/models/{model}:generateContent`` (or
``:streamGenerateContent?alt=sse``, ``:countTokens``); ``base_url`` is the bare host, as the
google-genai SDK takes it. What every API-key upstream shares (no refresh, the key's check by
listing models, rate-limit headers as quota) comes from :class:`~sublane_providers.kit.ApiKeyAdapter`;
this module adds the Gemini API's own: its paths, its paged model list, its error shapes
(:mod:`._failures`). The Gemini API sends no rate-limit headers on its answers (none are
documented, and Google's SDK has an open request to add them): its limits are seen only as 429s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_gemini._cache import CACHE_LIFETIME_S
from sublane_provider_gemini._failures import classify_failure
from sublane_provider_gemini._models import MAX_PAGES, PAGE_SIZE, next_page, serving_models
from sublane_provider_gemini._request import (
    API_VERSION,
    METHODS,
    api_host,
    model_url,
    upstream_body,
    upstream_headers,
)
from sublane_provider_gemini._settings import DEFAULT_BASE_URL, GeminiSettings
from sublane_provider_gemini._stream import GeminiStreamObserver
from sublane_provider_gemini._vocabulary import VOCABULARY
from sublane_providers import (
    ImportedCredentials,
    MetadataHttp,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
)
from sublane_providers.kit import ApiKeyAdapter, parse_api_key_credentials

NAME = "gemini"


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """``{"api_key", "base_url"?}``. A key imported without a base URL keeps none: it follows
    ``SUBLANE_GEMINI_BASE_URL`` (the public API unless set). A base URL is stored without a version
    path (:func:`api_host`: pasted with ``/v1beta`` or without)."""
    imported = parse_api_key_credentials(NAME, data, default_base_url=DEFAULT_BASE_URL)
    if data.get("base_url") in (None, ""):
        bundle = {key: value for key, value in imported.bundle.items() if key != "base_url"}
    else:
        bundle = {**imported.bundle, "base_url": api_host(str(imported.bundle["base_url"]))}
    return dataclasses.replace(imported, bundle=bundle)


class GeminiAdapter(ApiKeyAdapter):
    """Talks to the Gemini API with one account's key."""

    name = NAME
    label = "Gemini API (key)"
    credential_file = 'a Gemini API key: {"api_key": "AIza…", "base_url"?}'
    protocol = WireProtocol.GEMINI
    operations = frozenset(METHODS)
    cache_lifetime = CACHE_LIFETIME_S
    #: What its upstream is known to answer (CLIENT-7: anything else is reported).
    vocabulary = VOCABULARY

    def __init__(self, *, base_url: str, http: MetadataHttp, metadata_timeout: float) -> None:
        self.default_base_url = api_host(base_url)
        self._http = http
        self._metadata_timeout = metadata_timeout

    def base_url(self, bundle: Mapping[str, Any]) -> str:
        """The key's base URL without a version path (accounts stored before imports dropped it)."""
        return api_host(super().base_url(bundle))

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return parse_credentials(data)

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
        _, accept = METHODS[operation]
        url = model_url(self.base_url(bundle), str(body["model"]), operation)
        content = json_dumps(upstream_body(operation, body), errors="surrogatepass")
        return UpstreamRequest("POST", url, upstream_headers(self.api_key(bundle), accept=accept), content)

    def new_observer(self, state: StreamState | None = None) -> GeminiStreamObserver:
        return GeminiStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_failure(status, headers, body, now)

    # -- metadata ---------------------------------------------------------------------------------

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """The key's models serving ``generateContent``, every page of ``GET /v1beta/models``;
        raises ``httpx.HTTPStatusError`` when the key is refused."""
        models: list[str] = []
        token: str | None = None
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {"pageSize": PAGE_SIZE}
            if token:
                params["pageToken"] = token
            response = await self._http.get(
                f"{self.base_url(bundle)}/{API_VERSION}/models",
                params=params,
                headers=upstream_headers(self.api_key(bundle), accept="application/json"),
                timeout=self._metadata_timeout,
            )
            response.raise_for_status()
            page = response.json()
            if not isinstance(page, dict):
                raise ValueError("the model list is not an object")
            models.extend(model for model in serving_models(page) if model not in models)
            token = next_page(page)
            if token is None:
                break
        return models


def build_adapter(
    own: GeminiSettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> GeminiAdapter:
    """The gemini adapter of a gateway process, from its settings."""
    return GeminiAdapter(
        base_url=own.gemini_base_url, http=transport.metadata, metadata_timeout=settings.metadata_timeout_s
    )
