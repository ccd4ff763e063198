"""The anthropic adapter passes the shared contract kit against the simulator (what an API key has in
place of a refresh and a quota read is checked instead), and what the kit does not cover of it:
the headers an API key carries, JSON and count_tokens calls, paged model lists, the key's check."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from sublane_core import Billing, UpstreamOperation
from sublane_provider_anthropic import OAUTH_BETA, PROVIDER, AnthropicAdapter, api_headers, parse_credentials
from sublane_providers import (
    CredentialsRefused,
    FailureKind,
    Outcome,
    ProviderAdapter,
    RefreshFailed,
)
from sublane_providers.testing import AdapterContract, ContractUpstream, UpstreamAccount, as_httpx
from sublane_sim import Behaviour, Simulator

MODEL = "claude-opus-4-8"
CLAUDE_CODE_BETAS = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"


def anthropic_adapter(sim: Simulator, http: httpx.AsyncClient) -> AnthropicAdapter:
    return AnthropicAdapter(base_url=sim.anthropic_base_url, http=http, metadata_timeout=10)


def minimal_body() -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": "say hi"}]}


class TestAnthropicAdapterContract(AdapterContract):
    provider = "anthropic"
    model = MODEL

    def make_adapter(self, sim: Simulator, http: httpx.AsyncClient) -> ProviderAdapter:
        return anthropic_adapter(sim, http)

    def native_body(self) -> dict[str, Any]:
        return minimal_body()

    # An API key has no refresh token, nothing to refresh and no quota endpoint: in their place, a
    # key is its own identity, a refresh always fails for good (PAID-4) and quota comes on answers.

    def test_contract_parses_its_credential_file(
        self, adapter: ProviderAdapter, account: UpstreamAccount
    ) -> None:
        imported = adapter.parse_credentials(account.credentials)
        assert imported.provider == "anthropic"
        assert imported.identity.plan == "api_key" and imported.identity.subject
        assert account.credentials["api_key"] not in repr(imported.identity)

    async def test_contract_refresh_gives_fresh_credentials(
        self, adapter: ProviderAdapter, bundle: dict[str, Any]
    ) -> None:
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert failed.value.permanent and failed.value.code == "unauthorized"

    async def test_contract_dead_refresh_token_is_permanent(
        self,
        adapter: ProviderAdapter,
        bundle: dict[str, Any],
        upstream: ContractUpstream,
        account: UpstreamAccount,
    ) -> None:
        await self.test_contract_refresh_gives_fresh_credentials(adapter, bundle)

    async def test_contract_transient_refresh_failure_is_not_permanent(
        self,
        adapter: ProviderAdapter,
        bundle: dict[str, Any],
        upstream: ContractUpstream,
        account: UpstreamAccount,
    ) -> None:
        pytest.skip("an API key has no refresh to fail transiently")

    async def test_contract_refresh_retry_after_is_kept(
        self,
        adapter: ProviderAdapter,
        bundle: dict[str, Any],
        upstream: ContractUpstream,
        account: UpstreamAccount,
    ) -> None:
        pytest.skip("an API key has no refresh to fail transiently")

    async def test_contract_reads_quota(self, adapter: ProviderAdapter, bundle: dict[str, Any]) -> None:
        status, _, _ = await self.stream(adapter, httpx.AsyncClient(), bundle)
        assert status == 200
        _plan, windows = await adapter.read_quota(bundle, 0.0)
        assert windows == ()  # no quota endpoint: the answers' headers are read instead


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


def test_paid_1_the_plugin_is_metered() -> None:
    assert PROVIDER.name == "anthropic" and PROVIDER.billing is Billing.METERED


def test_paid_1_a_key_without_base_url_is_served_at_the_setting() -> None:
    imported = parse_credentials({"api_key": "sk-ant-api03-abcdefgh"})
    assert imported.bundle == {"api_key": "sk-ant-api03-abcdefgh"}
    adapter = AnthropicAdapter(base_url="http://127.0.0.1:9/x/", http=httpx.AsyncClient(), metadata_timeout=1)
    request = adapter.build_request(
        UpstreamOperation.STREAM, imported.bundle, minimal_body(), {}, bound=False
    )
    assert request.url == "http://127.0.0.1:9/x/v1/messages"
    own = parse_credentials({"api_key": "sk-ant-api03-abcdefgh", "base_url": "https://proxy.example/"})
    assert adapter.base_url(own.bundle) == "https://proxy.example"


def test_paid_1_an_api_key_never_carries_the_oauth_identity() -> None:
    headers = api_headers(
        {
            "anthropic-beta": f"{CLAUDE_CODE_BETAS},{OAUTH_BETA}",
            "anthropic-version": "2023-06-01",
            "authorization": "Bearer sk-sublane-member-key",
            "x-api-key": "sk-sublane-member-key",
            "user-agent": "claude-cli/2.1.332 (external, cli)",
            "x-claude-code-session-id": "s-1",
        },
        api_key="sk-ant-api03-secret",
    )
    assert headers == {
        "x-api-key": "sk-ant-api03-secret",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": CLAUDE_CODE_BETAS,
    }
    assert api_headers({"anthropic-beta": OAUTH_BETA}, api_key="k") == {
        "x-api-key": "k",
        "anthropic-version": "2023-06-01",
    }


async def test_paid_1_json_and_count_tokens_calls(sim: Simulator, http: httpx.AsyncClient) -> None:
    account = sim.create_account("anthropic")
    sim.set_default(account.id, Behaviour.ok(text="hello there", deltas=2))
    adapter = anthropic_adapter(sim, http)
    bundle = dict(adapter.parse_credentials(account.credentials).bundle)
    request = adapter.build_request(
        UpstreamOperation.JSON, bundle, minimal_body(), {"anthropic-beta": CLAUDE_CODE_BETAS}, bound=True
    )
    response = await http.send(as_httpx(http, request))
    assert response.status_code == 200, response.text
    observer = adapter.new_observer()
    observer.observe_answer(response.json())
    assert observer.state.outcome is Outcome.SUCCESS
    assert observer.state.usage is not None and observer.state.usage.cache_write_tokens is not None
    windows = adapter.quota_from_headers(response.headers, sim.clock.now())[1]
    assert {window.window for window in windows} == {"requests", "tokens", "input_tokens", "output_tokens"}
    seen = sim.requests(endpoint="anthropic.messages")[-1]
    assert seen.headers["x-api-key"] == account.api_key and "authorization" not in seen.headers
    assert seen.headers["anthropic-beta"] == CLAUDE_CODE_BETAS
    count = adapter.build_request(UpstreamOperation.COUNT_TOKENS, bundle, minimal_body(), {}, bound=False)
    counted = await http.send(as_httpx(http, count))
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
    assert "stream" not in json.loads(count.content)


async def test_paid_1_models_are_read_page_after_page(sim: Simulator, http: httpx.AsyncClient) -> None:
    account = sim.create_account("anthropic", models=tuple(f"claude-m-{n}" for n in range(1500)))
    adapter = anthropic_adapter(sim, http)
    models = await adapter.list_models(dict(adapter.parse_credentials(account.credentials).bundle))
    assert len(models) == 1500
    assert len(sim.requests(endpoint="anthropic.models")) == 2


async def test_paid_1_a_refused_key_is_not_imported(sim: Simulator, http: httpx.AsyncClient) -> None:
    adapter = anthropic_adapter(sim, http)
    imported = parse_credentials({"api_key": "sk-ant-api03-not-a-key"})
    with pytest.raises(CredentialsRefused) as refused:
        await adapter.check_credentials(imported)
    assert "401" in str(refused.value) and "not-a-key" not in str(refused.value)


async def test_paid_4_overloaded_529_is_transient(sim: Simulator, http: httpx.AsyncClient) -> None:
    account = sim.create_account("anthropic")
    sim.script(account.id, Behaviour.error(529))
    adapter = anthropic_adapter(sim, http)
    bundle = dict(adapter.parse_credentials(account.credentials).bundle)
    request = adapter.build_request(UpstreamOperation.JSON, bundle, minimal_body(), {}, bound=False)
    response = await http.send(as_httpx(http, request))
    assert response.status_code == 529
    assert response.json()["error"]["type"] == "overloaded_error"
    failure = adapter.classify_failure(529, response.headers, response.content, 0.0)
    assert failure.kind is FailureKind.TRANSIENT  # another account serves (not a replay, RETRY-1)


def test_paid_4_a_key_without_credit_is_out_of_quota_not_the_requests_fault() -> None:
    """The API answers a key whose organisation has no credit left with a 400
    ``invalid_request_error`` ("Your credit balance is too low…"): the key is spent (another
    account serves), not the client's request wrong."""
    adapter = AnthropicAdapter(base_url="http://127.0.0.1:9", http=httpx.AsyncClient(), metadata_timeout=1)
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "Your credit balance is too low to access the Anthropic API. "
            "Please go to Plans & Billing to upgrade or purchase credits.",
        },
        "request_id": "req_011CbrFTcXhtiMzr3s6EocF7",
    }
    spent = adapter.classify_failure(400, {}, json.dumps(body).encode(), 0.0)
    assert spent.kind is FailureKind.QUOTA_EXHAUSTED and spent.status == 400
    required = "max_tokens: Field required"
    other = {"type": "error", "error": {"type": "invalid_request_error", "message": required}}
    assert adapter.classify_failure(400, {}, json.dumps(other).encode(), 0.0).kind is FailureKind.CLIENT_ERROR


def test_paid_1_a_base_url_pasted_with_v1_is_the_host() -> None:
    """Imported with ``/v1`` (the API reference's URLs, a proxy's page) it is stored without; an
    account stored with it before, and a setting pasted with it, are served without it too."""
    for pasted in (
        "https://api.anthropic.com/v1",
        "https://api.anthropic.com/v1/",
        "https://api.anthropic.com/",
    ):
        own = parse_credentials({"api_key": "sk-ant-api03-abcdefgh", "base_url": pasted})
        assert own.bundle["base_url"] == "https://api.anthropic.com"
    proxied = parse_credentials(
        {"api_key": "sk-ant-api03-abcdefgh", "base_url": "https://proxy.example/claude/v1"}
    )
    assert proxied.bundle["base_url"] == "https://proxy.example/claude"
    adapter = AnthropicAdapter(
        base_url="http://127.0.0.1:9/x/v1/", http=httpx.AsyncClient(), metadata_timeout=1
    )
    stored_before = {"api_key": "sk-ant-api03-abcdefgh", "base_url": "https://proxy.example/v1"}
    request = adapter.build_request(UpstreamOperation.JSON, stored_before, minimal_body(), {}, bound=False)
    assert request.url == "https://proxy.example/v1/messages"
    keyed = adapter.build_request(
        UpstreamOperation.STREAM, {"api_key": "sk-ant-api03-abcdefgh"}, minimal_body(), {}, bound=False
    )
    assert keyed.url == "http://127.0.0.1:9/x/v1/messages"
