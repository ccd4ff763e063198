"""The parrot adapter: accounts of an upstream that speaks OpenAI Responses over HTTP (no sockets).

Its upstream (``base_url``) serves ``POST /v1/responses`` (a stream or one JSON answer),
``POST /oauth/token`` (rotating refresh tokens), ``GET /v1/usage`` and ``GET /v1/models``, with a
bearer token. Everything the gateway needs to know about it is said here, as attributes and data;
the gateway, the protocols package and the web views are not changed to serve it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx

from sublane_core import Clock, Dialect, Settings, UpstreamOperation, WireProtocol, json_dumps, signals
from sublane_provider_parrot._credentials import FILE, parse_credentials
from sublane_provider_parrot._failures import classify_failure, error_code
from sublane_provider_parrot._settings import ParrotSettings
from sublane_providers import (
    ImportedCredentials,
    MetadataHttp,
    ProviderAdapter,
    Quota,
    RefreshedCredentials,
    RefreshFailed,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
)
from sublane_providers.kit import ResponsesStreamObserver, header, oauth_retry_after

#: What parrot accounts serve while discovery fails.
KNOWN_MODELS = frozenset({"parrot-1", "parrot-1-mini"})
#: Sampling settings the parrot upstream refuses (400 "Unsupported parameter"), dropped from translated
#: bodies as harmless; stop sequences it cannot honour, so a request that sets them is refused; and
#: it wants to be told it is a parrot, once, ahead of any instructions.
PARROT_DIALECT = Dialect(
    refused=(("stop", "Stop sequences are not supported by the parrot upstream."),),
    dropped=frozenset({"temperature", "top_p", "stop"}),
    required=(("store", False),),
    system_prelude="You are a parrot.",
)
#: The client headers the upstream gets (everything else stays with the gateway).
PASSED_HEADERS = ("user-agent", "x-parrot-trace")
QUOTA_USED = "x-parrot-quota-used-percent"
QUOTA_RESETS = "x-parrot-quota-resets-at"
PERMANENT_REFRESH_CODES = frozenset({"invalid_grant"})


class ParrotAdapter(ProviderAdapter):
    """One process's door to the parrot upstream."""

    name = "parrot"
    label = "Parrot (test provider)"
    credential_file = FILE
    protocol = WireProtocol.RESPONSES
    dialect = PARROT_DIALECT
    operations = frozenset({UpstreamOperation.STREAM, UpstreamOperation.JSON})
    fallback_models = KNOWN_MODELS

    def __init__(self, *, base_url: str, http: MetadataHttp, metadata_timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = http
        self._timeout = metadata_timeout

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
        if operation not in self.operations:
            raise ValueError(f"parrot cannot build a {operation} request")
        stream = operation is UpstreamOperation.STREAM
        headers = {name: client_headers[name] for name in PASSED_HEADERS if name in client_headers}
        headers["authorization"] = f"Bearer {bundle['access_token']}"
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream" if stream else "application/json"
        if bound and conversation_key:
            headers["x-parrot-conversation"] = conversation_key
        payload = {**body, "stream": stream}
        return UpstreamRequest(
            "POST", f"{self.base_url}/v1/responses", headers, json_dumps(payload, ensure_ascii=True)
        )

    def new_observer(self, state: StreamState | None = None) -> ResponsesStreamObserver:
        return ResponsesStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return classify_failure(status, headers, body, now)

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        """Trade the refresh token for new tokens; the upstream rotates both."""
        try:
            response = await self._http.post(
                f"{self.base_url}/oauth/token",
                json={"grant_type": "refresh_token", "refresh_token": bundle["refresh_token"]},
                timeout=self._timeout,
            )
        except httpx.HTTPError as exc:
            raise RefreshFailed(f"network:{type(exc).__name__}", permanent=False) from None
        if response.status_code != 200:
            code = error_code(response.content)[0] or f"http_{response.status_code}"
            raise RefreshFailed(
                code,
                permanent=response.status_code in (400, 401) and code in PERMANENT_REFRESH_CODES,
                retry_after=oauth_retry_after(response.headers, time.time()),
            )
        try:
            tokens = response.json()
        except ValueError:
            raise RefreshFailed("invalid_token_response", permanent=False) from None
        if not isinstance(tokens, dict) or not isinstance(tokens.get("access_token"), str):
            raise RefreshFailed("invalid_token_response", permanent=False)
        merged = {**bundle, "access_token": tokens["access_token"]}
        if isinstance(tokens.get("refresh_token"), str):
            merged["refresh_token"] = tokens["refresh_token"]
        expires_in = tokens.get("expires_in")
        expires_at = time.time() + expires_in if isinstance(expires_in, int | float) else None
        return RefreshedCredentials(bundle=merged, expires_at=expires_at)

    async def _get(self, path: str, bundle: Mapping[str, Any]) -> Any:
        response = await self._http.get(
            f"{self.base_url}{path}",
            headers={"authorization": f"Bearer {bundle['access_token']}"},
            timeout=self._timeout,
        )
        response.raise_for_status()
        return response.json()

    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
        """``GET /v1/usage``: ``{"plan", "windows": [{"name", "used_percent", "window_seconds",
        "resets_at"}]}``, the first window the main one."""
        payload = await self._get("/v1/usage", bundle)
        if not isinstance(payload, dict) or not isinstance(payload.get("windows"), list):
            raise ValueError("v1/usage answered no windows")
        windows = tuple(
            signals.QuotaWindow(
                window=str(item.get("name")),
                used_percent=_number(item.get("used_percent")),
                window_seconds=_whole(item.get("window_seconds")),
                resets_at=_number(item.get("resets_at")),
                limit_reached=(_number(item.get("used_percent")) or 0.0) >= 100.0,
                main=index == 0,
            )
            for index, item in enumerate(payload["windows"])
            if isinstance(item, dict)
        )
        plan = payload.get("plan")
        return (plan if isinstance(plan, str) else None), windows

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """``GET /v1/models``: ``{"data": [{"id": …}]}``."""
        payload = await self._get("/v1/models", bundle)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise ValueError("v1/models answered no model list")
        return [
            str(item["id"]) for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]

    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        """The main window as every answer's headers report it (nothing when they don't)."""
        used = _number(header(headers, QUOTA_USED))
        if used is None:
            return None, ()
        window = signals.QuotaWindow(
            window="5h",
            used_percent=used,
            window_seconds=5 * 3600,
            resets_at=_number(header(headers, QUOTA_RESETS)),
            limit_reached=used >= 100.0,
        )
        return None, (window,)


def _number(value: Any) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        return float(value)
    return None


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def build_adapter(
    own: ParrotSettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> ParrotAdapter:
    """The parrot adapter of a gateway process."""
    return ParrotAdapter(
        base_url=own.parrot_base_url, http=transport.metadata, metadata_timeout=settings.metadata_timeout_s
    )
