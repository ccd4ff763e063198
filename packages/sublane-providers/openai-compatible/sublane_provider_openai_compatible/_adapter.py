"""The adapter of an OpenAI-compatible server: Chat Completions with a bearer API key (PAID-1).

Every account names its own server (``base_url``, OpenAI-style with ``/v1``), so one gateway may
pool a coding plan, a vLLM cluster and an Ollama box. Requests go to ``POST {base_url}/chat/
completions``, streamed or as one JSON answer; a streamed one always asks
``stream_options.include_usage`` so every call is recorded and priced with its tokens (a Chat
Completions client that did not ask gets one more chunk, with empty ``choices`` and the usage, as
OpenAI's own server sends it). Clients of the other protocols are translated through the hub.

The key is checked by listing models (``GET {base_url}/models``): a 401/403 refuses the import; a
server that lists none (404, 405, 501) is accepted when the import names its ``models``, which are
then what the account serves. What the kit's :class:`~sublane_providers.kit.ApiKeyAdapter` gives:
no refresh (a 401 marks the account unauthorized), 429 cooling for ``retry-after``, 5xx transient,
other 4xx the request's own fault, ``x-ratelimit-*`` headers as quota when a server sends them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps
from sublane_provider_openai_compatible._credentials import FILE, NAME, parse_credentials
from sublane_provider_openai_compatible._settings import CompatibleSettings
from sublane_provider_openai_compatible._stream import ChatStreamObserver
from sublane_providers import ImportedCredentials, MetadataHttp, StreamState, UpstreamClients, UpstreamRequest
from sublane_providers.kit import ApiKeyAdapter

#: What a server without a model list answers ``GET /models`` with.
NO_MODEL_LIST = frozenset({404, 405, 501})
#: The client headers that reach the server (everything else stays with the gateway).
PASSED_HEADERS = ("user-agent",)


class CompatibleAdapter(ApiKeyAdapter):
    """One process's door to OpenAI-compatible servers."""

    name = NAME
    label = "OpenAI-compatible server (API key)"
    credential_file = FILE
    protocol = WireProtocol.CHAT_COMPLETIONS
    operations = frozenset({UpstreamOperation.STREAM, UpstreamOperation.JSON})
    names_models = True  # a server may list no models: the import names them

    def __init__(self, *, http: MetadataHttp, metadata_timeout: float) -> None:
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
            raise ValueError(f"an OpenAI-compatible server cannot take a {operation} request")
        stream = operation is UpstreamOperation.STREAM
        headers = {name: client_headers[name] for name in PASSED_HEADERS if name in client_headers}
        headers["authorization"] = f"Bearer {self.api_key(bundle)}"
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream" if stream else "application/json"
        payload = {key: value for key, value in body.items() if key != "stream_options"}
        payload["stream"] = stream
        if stream:
            options = body.get("stream_options")
            given = dict(options) if isinstance(options, Mapping) else {}
            payload["stream_options"] = {**given, "include_usage": True}
        url = f"{self.base_url(bundle)}/chat/completions"
        return UpstreamRequest("POST", url, headers, json_dumps(payload, ensure_ascii=True))

    def new_observer(self, state: StreamState | None = None) -> ChatStreamObserver:
        return ChatStreamObserver(state)

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        """The ``models`` the import named, once the server took the key; else the server's list
        (``{"data": [{"id": …}]}``). Raises ``httpx.HTTPStatusError`` for a refused key."""
        response = await self._http.get(
            f"{self.base_url(bundle)}/models",
            headers={"authorization": f"Bearer {self.api_key(bundle)}"},
            timeout=self._timeout,
        )
        named = bundle.get("models")
        given = [str(model) for model in named] if isinstance(named, list) else []
        if response.status_code in NO_MODEL_LIST and given:
            return given
        if response.status_code in NO_MODEL_LIST:
            raise ValueError("the server lists no models: name them in the credentials' 'models'")
        response.raise_for_status()
        if given:
            return given
        payload = response.json()
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise ValueError("the model list holds no 'data'")
        return [
            str(item["id"]) for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]


def build_adapter(
    own: CompatibleSettings, settings: Settings, transport: UpstreamClients, clock: Clock
) -> CompatibleAdapter:
    """The adapter of a gateway process."""
    return CompatibleAdapter(http=transport.metadata, metadata_timeout=settings.metadata_timeout_s)
