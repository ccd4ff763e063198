"""The provider contract is small and fixed; anything more is a capability found with isinstance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sublane_core import UpstreamOperation, WireProtocol
from sublane_providers import (
    AliasesModels,
    CompletesBundles,
    CompletesImports,
    FailureKind,
    HasOtherHosts,
    ImportedCredentials,
    OpensSessions,
    ProviderAdapter,
    Quota,
    RefreshedCredentials,
    ReportsQuotaInStream,
    SignsIn,
    StreamState,
    UpstreamFailure,
    UpstreamRequest,
    WrapsEvents,
)
from sublane_providers.kit import ResponsesStreamObserver

CAPABILITIES = (
    AliasesModels,
    CompletesBundles,
    CompletesImports,
    HasOtherHosts,
    OpensSessions,
    ReportsQuotaInStream,
    SignsIn,
    WrapsEvents,
)


class Plain(ProviderAdapter):
    """The least a provider can be: the required methods and nothing else."""

    name = "plain"
    protocol = WireProtocol.RESPONSES
    operations = frozenset({UpstreamOperation.STREAM})

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> ImportedCredentials:
        return ImportedCredentials(provider="plain", bundle=dict(data), expires_at=None)

    async def refresh(self, bundle: Mapping[str, Any]) -> RefreshedCredentials:
        return RefreshedCredentials(bundle=dict(bundle), expires_at=None)

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
        return UpstreamRequest("POST", "http://127.0.0.1:9/", {}, b"{}")

    def new_observer(self, state: StreamState | None = None) -> ResponsesStreamObserver:
        return ResponsesStreamObserver(state)

    def classify_failure(
        self, status: int, headers: Mapping[str, str], body: bytes, now: float
    ) -> UpstreamFailure:
        return UpstreamFailure(FailureKind.CLIENT_ERROR, status, f"http_{status}", "refused")

    def quota_from_headers(self, headers: Mapping[str, str], now: float) -> Quota:
        return None, ()

    async def read_quota(self, bundle: Mapping[str, Any], now: float) -> Quota:
        return None, ()

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        return []


class Wrapping(Plain, WrapsEvents, AliasesModels):
    def unwrap_event(self, payload: dict[str, Any]) -> dict[str, Any]:
        inner: dict[str, Any] = payload["response"]
        return inner

    def model_aliases(self, models: frozenset[str]) -> frozenset[str]:
        return frozenset(f"{model}-latest" for model in models)


def test_the_required_contract_is_eight_methods() -> None:
    assert ProviderAdapter.__abstractmethods__ == {
        "parse_credentials",
        "refresh",
        "build_request",
        "new_observer",
        "classify_failure",
        "quota_from_headers",
        "read_quota",
        "list_models",
    }


def test_a_plain_adapter_offers_no_capability() -> None:
    adapter = Plain()
    assert not any(isinstance(adapter, capability) for capability in CAPABILITIES)


def test_capabilities_are_found_by_what_an_adapter_implements() -> None:
    adapter = Wrapping()
    offered = {capability for capability in CAPABILITIES if isinstance(adapter, capability)}
    assert offered == {WrapsEvents, AliasesModels}
    assert adapter.unwrap_event({"response": {"a": 1}}) == {"a": 1}
