"""The openai adapter: API-key accounts of the OpenAI API, speaking OpenAI Responses (PAID-1).

Inference is ``POST {base_url}/responses`` (an SSE stream of Responses events, or one ``response``
object), compaction ``POST {base_url}/responses/compact`` (plain JSON), the key's check and the
model catalogue ``GET {base_url}/models`` (``{"data": [{"id"}]}``). Chat Completions, Messages and
Gemini clients reach these accounts through the hub (their bodies translated to Responses). What
every API-key upstream shares — no refresh, ``x-ratelimit-*`` headers as quota, error
classification — is :class:`~sublane_providers.kit.ApiKeyAdapter`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_openai._credentials import parse_credentials
from sublane_provider_openai._request import (
    OPENAI_DIALECT,
    api_base,
    compact_body,
    responses_body,
    upstream_headers,
)
from sublane_provider_openai._settings import OpenAISettings
from sublane_provider_openai._vocabulary import VOCABULARY
from sublane_providers import (
    ChecksCredentials,
    FailureKind,
    ImportedCredentials,
    MetadataHttp,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
)
from sublane_providers.kit import (
    MAX_RETRY_AFTER_S,
    ApiKeyAdapter,
    ResponsesStreamObserver,
    rate_limit_windows,
)

#: 429 codes meaning the key's credit, not its rate, is used up (the error ``code`` OpenAI sends).
EXHAUSTED_CODES = frozenset({"insufficient_quota"})
#: How long OpenAI keeps a prompt-cache prefix unused by default (5 to 10 minutes, up to an hour
#: off-peak) and with ``prompt_cache_retention: "24h"``.
CACHE_LIFETIME_S = 300.0
EXTENDED_CACHE_LIFETIME_S = 24 * 3600.0


class OpenAIAdapter(ApiKeyAdapter, ChecksCredentials):
    """One process's door to the OpenAI API for API-key accounts."""

    name = "openai"
    label = "OpenAI API (API key)"
    credential_file = 'an OpenAI API key as {"api_key": "sk-…"}'
    subject_label = "key"
    protocol = WireProtocol.RESPONSES
    dialect = OPENAI_DIALECT
    operations = frozenset({UpstreamOperation.STREAM, UpstreamOperation.JSON, UpstreamOperation.COMPACT})
    exhausted_codes: ClassVar[frozenset[str]] = EXHAUSTED_CODES
    cache_lifetime = CACHE_LIFETIME_S
    #: What the API is known to answer (CLIENT-7); its catalogue is what the key lists (no models).
    vocabulary = VOCABULARY

    def __init__(self, *, default_base_url: str, http: MetadataHttp, metadata_timeout: float) -> None:
        self.default_base_url = api_base(default_base_url)
        self._http = http
        self._timeout = metadata_timeout

    def base_url(self, bundle: Mapping[str, Any]) -> str:
        """The key's base URL with its ``/v1`` (:func:`api_base`; accounts stored before imports
        normalised it too)."""
        return api_base(super().base_url(bundle))

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return parse_credentials(data)

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
        if operation not in self.operations:
            raise ValueError(f"openai cannot build a {operation} request")
        base = self.base_url(bundle)
        if operation is UpstreamOperation.COMPACT:
            headers = upstream_headers(self.api_key(bundle), stream=False)
            content = json_dumps(compact_body(body), ensure_ascii=True)
            return UpstreamRequest("POST", f"{base}/responses/compact", headers, content)
        stream = operation is UpstreamOperation.STREAM
        headers = upstream_headers(self.api_key(bundle), stream=stream)
        content = json_dumps(responses_body(body, stream=stream), ensure_ascii=True)
        return UpstreamRequest("POST", f"{base}/responses", headers, content)

    def new_observer(self, state: StreamState | None = None) -> ResponsesStreamObserver:
        return ResponsesStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        """The kit's classification; a rate limit without ``retry-after`` (the API sends it only
        sometimes) waits until the reached ``x-ratelimit-reset-*`` window resets (PAID-4)."""
        failure = super().classify_failure(status, headers, body, now)
        if failure.kind is not FailureKind.RATE_LIMITED or failure.retry_after is not None:
            return failure
        waits = [
            window.resets_at - now
            for window in rate_limit_windows(headers, now)
            if window.limit_reached and window.resets_at is not None
        ]
        if not waits:
            return failure
        return dataclasses.replace(failure, retry_after=min(max(max(waits), 1.0), MAX_RETRY_AFTER_S))

    def cache_lifetime_s(self, body: Mapping[str, Any]) -> float:
        """COST-4: a request asking ``prompt_cache_retention: "24h"`` keeps its prefix a day."""
        if body.get("prompt_cache_retention") == "24h":
            return EXTENDED_CACHE_LIFETIME_S
        return self.cache_lifetime

    # -- metadata ---------------------------------------------------------------------------------

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """``GET {base_url}/models``: ``{"object": "list", "data": [{"id", "object": "model"}]}``;
        raises ``httpx.HTTPStatusError`` for a refused key."""
        response = await self._http.get(
            f"{self.base_url(bundle)}/models",
            headers={"authorization": f"Bearer {self.api_key(bundle)}", "accept": "application/json"},
            timeout=self._timeout,
        )
        response.raise_for_status()
        payload = response.json()
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise ValueError("models answered no model list")
        return [
            str(item["id"]) for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]


def build_adapter(
    own: OpenAISettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> OpenAIAdapter:
    """The openai adapter of a gateway process, from its settings."""
    return OpenAIAdapter(
        default_base_url=own.openai_base_url,
        http=transport.metadata,
        metadata_timeout=settings.metadata_timeout_s,
    )
