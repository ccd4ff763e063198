"""The openai adapter passes the shared contract kit against the simulator's OpenAI API, with what
differs for an API key: no refresh (a refused key stays refused), limits read from answer headers."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sublane_core import UpstreamOperation, json_loads
from sublane_provider_openai import PROVIDER, OpenAIAdapter, OpenAISettings
from sublane_providers import (
    CredentialFormatError,
    CredentialsRefused,
    FailureKind,
    ProviderAdapter,
    RefreshFailed,
    provider_plugin,
)
from sublane_providers.testing import AdapterContract, model_pool
from sublane_sim import Behaviour, Simulator


def _adapter(sim: Simulator, http: httpx.AsyncClient) -> OpenAIAdapter:
    return OpenAIAdapter(default_base_url=sim.openai_base_url, http=http, metadata_timeout=10)


class TestOpenAIAdapterContract(AdapterContract):
    provider = "openai"
    model = "gpt-5"

    def make_adapter(self, sim: Simulator, http: httpx.AsyncClient) -> ProviderAdapter:
        return _adapter(sim, http)

    def native_body(self) -> dict[str, Any]:
        return {"model": self.model, "input": "say hi", "stream": True}

    # -- an API key in place of OAuth tokens (PAID-1) ------------------------------------------------

    def test_contract_parses_its_credential_file(self, adapter: ProviderAdapter, account: Any) -> None:
        imported = adapter.parse_credentials(account.credentials)
        assert imported.provider == "openai" and imported.bundle["api_key"] == account.api_key
        assert imported.identity.plan == "api_key" and imported.identity.subject
        assert account.api_key not in str(imported.identity)

    async def test_contract_refresh_gives_fresh_credentials(
        self, adapter: ProviderAdapter, bundle: dict[str, Any]
    ) -> None:
        """An API key has nothing to refresh: a refused key stays refused (PAID-4)."""
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert failed.value.permanent and failed.value.code == "unauthorized"

    async def test_contract_transient_refresh_failure_is_not_permanent(
        self, adapter: ProviderAdapter, bundle: dict[str, Any]
    ) -> None:
        """No token endpoint is ever called, so no refresh failure is transient."""
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert failed.value.permanent

    async def test_contract_refresh_retry_after_is_kept(
        self, adapter: ProviderAdapter, bundle: dict[str, Any]
    ) -> None:
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert failed.value.retry_after is None

    async def test_contract_reads_quota(self, adapter: ProviderAdapter, bundle: dict[str, Any]) -> None:
        """The API has no quota endpoint: its limits arrive on every answer's headers."""
        assert await adapter.read_quota(bundle, 0.0) == ("api_key", ())


def test_paid_1_openai_distribution_registers_a_metered_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    assert provider_plugin("openai") is PROVIDER and PROVIDER.billing == "metered"
    assert OpenAISettings(_env_file=None).openai_base_url == "https://api.openai.com/v1"  # type: ignore[call-arg]
    monkeypatch.setenv("SUBLANE_OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert OpenAISettings(_env_file=None).openai_base_url == "http://127.0.0.1:1/v1"  # type: ignore[call-arg]


def test_paid_1_openai_credentials_need_a_key_and_a_usable_base_url() -> None:
    with pytest.raises(CredentialFormatError, match="api_key"):
        PROVIDER.parse_credentials({"base_url": "https://api.openai.com/v1"})
    with pytest.raises(CredentialFormatError, match="user or password"):
        PROVIDER.parse_credentials({"api_key": "sk-test-123456", "base_url": "https://u:p@example.com/v1"})
    # without a base_url the bundle keeps none: the account follows SUBLANE_OPENAI_BASE_URL
    assert PROVIDER.parse_credentials({"api_key": "sk-test-123456"}).bundle == {"api_key": "sk-test-123456"}


async def test_paid_1_openai_key_checked_by_listing_models(sim: Simulator) -> None:
    account = sim.create_account("openai")
    async with httpx.AsyncClient(timeout=10) as http:
        adapter = _adapter(sim, http)
        good = adapter.parse_credentials({"api_key": account.api_key})
        assert await adapter.check_credentials(good) is good
        wrong = adapter.parse_credentials({"api_key": "sk-proj-not-a-key-of-the-sim"})
        with pytest.raises(CredentialsRefused, match="401") as refused:
            await adapter.check_credentials(wrong)
        assert "not-a-key" not in str(refused.value)
        elsewhere = adapter.parse_credentials(
            {"api_key": account.api_key, "base_url": "http://127.0.0.1:9/v1"}
        )
        with pytest.raises(CredentialsRefused, match="could not be reached"):
            await adapter.check_credentials(elsewhere)
    assert sim.requests(endpoint="openai.models")[0].path == "/openai/v1/models"


def test_paid_1_openai_requests_go_to_responses_and_compact_with_the_key() -> None:
    adapter = OpenAIAdapter(default_base_url="https://api.openai.com/v1/", http=None, metadata_timeout=1)  # type: ignore[arg-type]
    bundle = {"api_key": "sk-test-123456"}
    client = {"user-agent": "codex_cli_rs/0.171.0", "session_id": "s1", "authorization": "Bearer sublane-key"}
    body = {"model": "gpt-5", "input": "hi", "stream_options": {"include_obfuscation": False}}
    streamed = adapter.build_request(UpstreamOperation.STREAM, bundle, body, client, bound=True)
    assert streamed.url == "https://api.openai.com/v1/responses"
    assert dict(streamed.headers) == {
        "authorization": "Bearer sk-test-123456",
        "content-type": "application/json",
        "accept": "text/event-stream",
    }  # nothing of the client's (its SubLane key least of all) goes upstream
    assert json_loads(streamed.content)["stream"] is True
    answered = adapter.build_request(
        UpstreamOperation.JSON, {**bundle, "base_url": "http://h/v1"}, body, {}, bound=False
    )
    assert answered.url == "http://h/v1/responses"
    sent = json_loads(answered.content)
    assert sent["stream"] is False and "stream_options" not in sent
    compacted = adapter.build_request(
        UpstreamOperation.COMPACT, bundle, {**body, "stream": True}, {}, bound=False
    )
    assert compacted.url == "https://api.openai.com/v1/responses/compact"
    assert "stream" not in json_loads(compacted.content)
    assert adapter.cache_lifetime_s({"prompt_cache_retention": "24h"}) == 24 * 3600
    assert adapter.cache_lifetime_s({}) == 300


async def _send(adapter: OpenAIAdapter, bundle: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = adapter.build_request(
        UpstreamOperation.JSON, bundle, {"model": "gpt-5", "input": "hi"}, {}, bound=False
    )
    pool = model_pool()
    try:
        response = await pool.send(request)
        body = b""
        while chunk := await response.read():
            body += chunk
        await response.aclose()
        return response.status_code, {k.lower(): v for k, v in response.headers.items()}, body
    finally:
        await pool.aclose()


async def test_paid_4_openai_answers_headers_become_quota_windows(sim: Simulator) -> None:
    account = sim.create_account("openai")
    sim.set_quota(account.id, "requests", used_percent=100, reset_in_s=20)
    async with httpx.AsyncClient(timeout=10) as http:
        adapter = _adapter(sim, http)
        bundle = dict(adapter.parse_credentials(account.credentials).bundle)
        status, headers, body = await _send(adapter, bundle)
    assert status == 429 and json_loads(body)["error"]["code"] == "rate_limit_exceeded"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    plan, windows = adapter.quota_from_headers(headers, 1000.0)
    by_name = {window.window: window for window in windows}
    assert plan == "api_key" and set(by_name) == {"requests", "tokens"}
    assert by_name["requests"].limit_reached and by_name["requests"].used_percent == 100
    assert 1000 < (by_name["requests"].resets_at or 0) <= 1020
    assert not by_name["tokens"].limit_reached
    failure = adapter.classify_failure(status, headers, body, 1000.0)
    assert "retry-after" not in headers  # the reached window's reset says how long to wait
    assert failure.kind is FailureKind.RATE_LIMITED and failure.retry_after is not None
    assert 15 <= failure.retry_after <= 20
    scripted = adapter.classify_failure(status, {**headers, "retry-after": "3"}, body, 1000.0)
    assert scripted.retry_after == 3  # a retry-after the API sends wins


async def test_paid_4_openai_insufficient_quota_is_the_keys_credit_used_up(sim: Simulator) -> None:
    account = sim.create_account("openai")
    sim.script(account.id, Behaviour.error(429, error_code="insufficient_quota"))
    async with httpx.AsyncClient(timeout=10) as http:
        adapter = _adapter(sim, http)
        bundle = dict(adapter.parse_credentials(account.credentials).bundle)
        status, headers, body = await _send(adapter, bundle)
        assert adapter.classify_failure(status, headers, body, 0.0).kind is FailureKind.QUOTA_EXHAUSTED
        sim.update_account(account.id, api_key_revoked=True)
        status, headers, body = await _send(adapter, bundle)
    assert status == 401 and b"Incorrect API key" in body
    failure = adapter.classify_failure(status, headers, body, 0.0)
    assert failure.kind is FailureKind.UNAUTHORIZED and account.api_key[-4:] not in failure.message


def test_paid_1_a_base_url_keeps_exactly_one_v1() -> None:
    """``/v1`` is part of the OpenAI API's base URL (as its SDK takes it): a bare host gets it, a
    doubled one is one, a proxy's own path is kept; at import, in the setting and on use."""
    from sublane_provider_openai._credentials import parse_credentials

    cases = {
        "https://api.openai.com": "https://api.openai.com/v1",
        "https://api.openai.com/": "https://api.openai.com/v1",
        "https://api.openai.com/v1/": "https://api.openai.com/v1",
        "https://api.openai.com/v1/v1": "https://api.openai.com/v1",
        "https://example.openai.azure.com/openai/v1": "https://example.openai.azure.com/openai/v1",
        "https://gateway.example/api/openai": "https://gateway.example/api/openai",
    }
    for pasted, served in cases.items():
        assert (
            parse_credentials({"api_key": "sk-test-12345678", "base_url": pasted}).bundle["base_url"]
            == served
        )
    adapter = OpenAIAdapter(
        default_base_url="http://127.0.0.1:9", http=httpx.AsyncClient(), metadata_timeout=1
    )
    body = {"model": "gpt-5", "input": "hi"}
    keyed = adapter.build_request(
        UpstreamOperation.JSON, {"api_key": "sk-test-12345678"}, body, {}, bound=False
    )
    assert keyed.url == "http://127.0.0.1:9/v1/responses"
    stored_before = {"api_key": "sk-test-12345678", "base_url": "https://api.openai.com"}
    assert adapter.build_request(UpstreamOperation.JSON, stored_before, body, {}, bound=False).url == (
        "https://api.openai.com/v1/responses"
    )
