"""The adapter of an OpenAI-compatible server: Chat Completions with a bearer API key (PAID-1).

Every account names its own server (``base_url``, OpenAI-style with ``/v1``), so one gateway may
pool a coding plan, a vLLM cluster and an Ollama box. Requests go to ``POST {base_url}/chat/
completions``, streamed or as one JSON answer; a streamed one always asks
``stream_options.include_usage`` so every call is recorded and priced with its tokens (a Chat
Completions client that did not ask gets one more chunk, with empty ``choices`` and the usage, as
OpenAI's own server sends it). Clients of the other protocols are translated through the hub.

Some servers refuse that field (Ollama, LM Studio, TGI, LocalAI, KoboldCPP, vLLM before 0.4.3,
Mistral's API with a 422 ``extra_forbidden``, Azure AI's "Extra parameters ['stream_options'] are
not allowed"): a 400 or 422 naming ``stream_options`` is answered by sending the same call once
more without it (the :class:`~sublane_providers.HasOtherHosts` capability: the same server, asked
in the one form it takes), and the server's base URL is remembered in memory so no later call asks
it again. Its streams' usage is then read from the finish chunk when the server puts it there;
without one the call is recorded without tokens. That 400 is never the account's failure.

The key is checked by listing models (``GET {base_url}/models``): a 401/403 refuses the import; a
server that lists none (404, 405, 501) is accepted when the import names its ``models``, which are
then what the account serves. What the kit's :class:`~sublane_providers.kit.ApiKeyAdapter` gives:
no refresh (a 401 marks the account unauthorized), 429 cooling for ``retry-after``, 5xx transient,
other 4xx the request's own fault, ``x-ratelimit-*`` headers as quota when a server sends them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sublane_core import Clock, Settings, UpstreamOperation, WireProtocol, json_dumps, json_loads
from sublane_provider_openai_compatible._credentials import FILE, NAME, parse_credentials
from sublane_provider_openai_compatible._settings import CompatibleSettings
from sublane_provider_openai_compatible._stream import ChatStreamObserver
from sublane_provider_openai_compatible._vocabulary import STREAM_OPTIONS_REFUSED, VOCABULARY
from sublane_providers import (
    FailureKind,
    HasOtherHosts,
    ImportedCredentials,
    MetadataHttp,
    StreamState,
    UpstreamClients,
    UpstreamFailure,
    UpstreamRequest,
)
from sublane_providers.kit import ApiKeyAdapter

#: What a server without a model list answers ``GET /models`` with.
NO_MODEL_LIST = frozenset({404, 405, 501})
#: The client headers that reach the server (everything else stays with the gateway).
PASSED_HEADERS = ("user-agent",)
#: How a server refuses a field it does not know: 400 (vLLM, llama.cpp, Ollama, Azure AI), 422
#: (pydantic servers: Mistral, TGI).
FIELD_REFUSALS = frozenset({400, 422})
COMPLETIONS_PATH = "/chat/completions"


class CompatibleAdapter(ApiKeyAdapter, HasOtherHosts):
    """One process's door to OpenAI-compatible servers."""

    name = NAME
    label = "OpenAI-compatible server (API key)"
    credential_file = FILE
    protocol = WireProtocol.CHAT_COMPLETIONS
    operations = frozenset({UpstreamOperation.STREAM, UpstreamOperation.JSON})
    names_models = True  # a server may list no models: the import names them
    #: What a server is known to answer (CLIENT-7); its catalogue is the server's (no models).
    vocabulary = VOCABULARY

    def __init__(self, *, http: MetadataHttp, metadata_timeout: float) -> None:
        self._http = http
        self._timeout = metadata_timeout
        #: Base URLs of the servers that refused ``stream_options`` (this process's memory).
        self._without_stream_options: set[str] = set()

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
        base = self.base_url(bundle)
        payload = {key: value for key, value in body.items() if key != "stream_options"}
        payload["stream"] = stream
        if stream and base not in self._without_stream_options:
            options = body.get("stream_options")
            given = dict(options) if isinstance(options, Mapping) else {}
            payload["stream_options"] = {**given, "include_usage": True}
        url = f"{base}{COMPLETIONS_PATH}"
        return UpstreamRequest("POST", url, headers, json_dumps(payload, ensure_ascii=True))

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        """The kit's classification; a 400/422 naming ``stream_options`` (in whatever shape the
        server words it) is :data:`STREAM_OPTIONS_REFUSED`, which :meth:`next_host` resends."""
        failure = super().classify_failure(status, headers, body, now)
        if status in FIELD_REFUSALS and b"stream_options" in body:
            return UpstreamFailure(FailureKind.CLIENT_ERROR, status, STREAM_OPTIONS_REFUSED, failure.message)
        return failure

    def next_host(self, request: UpstreamRequest, failure: UpstreamFailure | None) -> UpstreamRequest | None:
        """The same call without ``stream_options`` when the server refused it (once: the resent
        call has none to refuse), the server remembered as one not to ask again."""
        if (
            failure is None
            or failure.code != STREAM_OPTIONS_REFUSED
            or not request.url.endswith(COMPLETIONS_PATH)
        ):
            return None
        payload = json_loads(request.content)
        if not isinstance(payload, dict) or "stream_options" not in payload:
            return None
        self._without_stream_options.add(request.url[: -len(COMPLETIONS_PATH)])
        del payload["stream_options"]
        return dataclasses.replace(request, content=json_dumps(payload, ensure_ascii=True))

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
