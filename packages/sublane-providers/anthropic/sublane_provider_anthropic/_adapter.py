"""The anthropic adapter: Anthropic API keys (metered accounts, PAID-1) serving the Messages API."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_anthropic._cache import CACHE_LIFETIME_S, cache_lifetime_s
from sublane_provider_anthropic._request import (
    DEFAULT_VERSION,
    api_headers,
    api_root,
    count_tokens_url,
    messages_body,
    messages_url,
    models_url,
)
from sublane_provider_anthropic._settings import PUBLIC_BASE_URL, AnthropicSettings
from sublane_provider_anthropic._vocabulary import NO_CREDIT_CODE, VOCABULARY
from sublane_providers import (
    AliasesModels,
    FailureKind,
    ImportedCredentials,
    MetadataHttp,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
)
from sublane_providers.kit import ApiKeyAdapter, MessagesStreamObserver, parse_api_key_credentials

NAME = "anthropic"
#: Pages of ``GET /v1/models`` read at most (1000 ids each).
MAX_MODEL_PAGES = 10
_DATED = re.compile(r"^(claude-[a-z0-9.-]+?)-(\d{8})$")
#: How the API answers a key whose organisation has no credit left: a 400 ``invalid_request_error``
#: ("Your credit balance is too low to access the Anthropic API…"), not a 429.
NO_CREDIT = "Your credit balance is too low"


def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
    """``{"api_key", "base_url"?}``. A key imported without a base URL keeps none: it is served at
    ``SUBLANE_ANTHROPIC_BASE_URL`` (the public API unless set), read when the call is made. A base
    URL is stored without the API's ``/v1`` (:func:`api_root`: pasted with or without it)."""
    imported = parse_api_key_credentials(NAME, data, default_base_url=PUBLIC_BASE_URL)
    if data.get("base_url") in (None, ""):
        bundle = {key: value for key, value in imported.bundle.items() if key != "base_url"}
    else:
        bundle = {**imported.bundle, "base_url": api_root(str(imported.bundle["base_url"]))}
    return ImportedCredentials(
        provider=imported.provider,
        bundle=bundle,
        expires_at=imported.expires_at,
        identity=imported.identity,
    )


def aliases_of(models: Iterable[str]) -> frozenset[str]:
    """The API's aliases of dated model ids: ``claude-haiku-4-5-20251001`` is also
    ``claude-haiku-4-5`` and ``claude-haiku-4-5-latest``."""
    aliases: set[str] = set()
    for model in models:
        match = _DATED.match(model)
        if match:
            aliases.update((match.group(1), match.group(1) + "-latest"))
    return frozenset(aliases)


class AnthropicAdapter(ApiKeyAdapter, AliasesModels):
    """Anthropic API keys: ``POST /v1/messages`` (streamed and JSON), ``POST
    /v1/messages/count_tokens`` and ``GET /v1/models`` under the key's base URL.

    What the kit gives (PAID-4): a refused key is never refreshed (``reauth_required``,
    ``unauthorized``); a 429 cools the account for its ``retry-after``; 5xx and 529
    ``overloaded_error`` are transient; ``anthropic-ratelimit-*`` headers are quota windows.
    """

    name = NAME
    label = "Anthropic API"
    #: What an import takes (the web's import form shows it): a key, and the host when not the public API.
    credential_file = '{"api_key": "sk-ant-api03-…", "base_url": "https://api.anthropic.com" (optional)}'
    subject_label = "key"
    protocol = WireProtocol.MESSAGES
    operations = frozenset({UpstreamOperation.STREAM, UpstreamOperation.JSON, UpstreamOperation.COUNT_TOKENS})
    cache_lifetime = CACHE_LIFETIME_S
    #: What the API is known to answer (CLIENT-7); its catalogue is what the key lists (no models).
    vocabulary = VOCABULARY

    def __init__(self, *, base_url: str, http: MetadataHttp, metadata_timeout: float) -> None:
        self.default_base_url = api_root(base_url)
        self._http = http
        self._metadata_timeout = metadata_timeout

    def base_url(self, bundle: Mapping[str, Any]) -> str:
        """The key's base URL without ``/v1`` (an account stored before imports dropped it too)."""
        return api_root(super().base_url(bundle))

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return parse_credentials(data)

    def cache_lifetime_s(self, body: Mapping[str, Any]) -> float:
        """Five minutes, or an hour when a breakpoint asks ``"ttl": "1h"``."""
        return cache_lifetime_s(body)

    # -- a model call -----------------------------------------------------------------------------

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
        headers = api_headers(client_headers, api_key=self.api_key(bundle))
        headers["content-type"] = "application/json"
        payload = messages_body(body, model=str(body["model"]))
        host = self.base_url(bundle)
        if operation is UpstreamOperation.COUNT_TOKENS:
            headers["accept"] = "application/json"
            payload.pop("stream", None)
            return UpstreamRequest("POST", count_tokens_url(host), headers, json_dumps(payload))
        if operation is UpstreamOperation.STREAM:
            payload["stream"] = True
            headers["accept"] = "text/event-stream"
        elif operation is UpstreamOperation.JSON:
            payload["stream"] = False
            headers["accept"] = "application/json"
        else:
            raise ValueError(f"anthropic cannot build a {operation} request")
        return UpstreamRequest("POST", messages_url(host), headers, json_dumps(payload))

    def new_observer(self, state: StreamState | None = None) -> MessagesStreamObserver:
        return MessagesStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        """The kit's classification (PAID-4); a key without credit is spent (out of quota: another
        account serves), though the API answers it as a 400."""
        failure = super().classify_failure(status, headers, body, now)
        if failure.kind is FailureKind.CLIENT_ERROR and failure.message.startswith(NO_CREDIT):
            return UpstreamFailure(
                FailureKind.QUOTA_EXHAUSTED, status, NO_CREDIT_CODE, failure.message, failure.retry_after
            )
        return failure

    # -- models -----------------------------------------------------------------------------------

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """The key's models from ``GET /v1/models``, page by page (``has_more``, ``last_id``);
        raises ``httpx.HTTPStatusError`` for a refused key, ``ValueError`` for no model list."""
        headers = {
            "x-api-key": self.api_key(bundle),
            "anthropic-version": DEFAULT_VERSION,
            "accept": "application/json",
        }
        models: list[str] = []
        params: dict[str, str | int] = {"limit": 1000}
        for _page in range(MAX_MODEL_PAGES):
            response = await self._http.get(
                models_url(self.base_url(bundle)),
                headers=headers,
                params=params,
                timeout=self._metadata_timeout,
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
            params = {"limit": 1000, "after_id": last}
        return models

    def model_aliases(self, models: frozenset[str]) -> frozenset[str]:
        return aliases_of(models) - models


def build_adapter(
    own: AnthropicSettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> AnthropicAdapter:
    """The anthropic adapter of a gateway process, from its settings."""
    return AnthropicAdapter(
        base_url=own.anthropic_base_url,
        http=transport.metadata,
        metadata_timeout=settings.metadata_timeout_s,
    )
