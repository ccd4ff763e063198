"""The gemini adapter against the simulator's Gemini API (``/gemini``): the shared contract, as an
API-key provider passes it (PAID-1, PAID-4), and what is the Gemini API's own."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sublane_core import Billing, UpstreamOperation
from sublane_provider_gemini import PROVIDER, GeminiAdapter, parse_credentials
from sublane_providers import ChecksCredentials, CredentialsRefused, FailureKind, RefreshFailed
from sublane_providers.testing import AdapterContract, UpstreamAccount, as_httpx
from sublane_sim import Behaviour, Simulator

MODEL = "gemini-2.5-flash"


class TestGeminiAdapterContract(AdapterContract):
    provider, model = "gemini", MODEL

    def make_adapter(self, sim: Any, http: httpx.AsyncClient) -> GeminiAdapter:
        return GeminiAdapter(base_url=sim.gemini_base_url, http=http, metadata_timeout=10)

    def native_body(self) -> dict[str, Any]:
        return {"model": self.model, "contents": [{"role": "user", "parts": [{"text": "say hi"}]}]}

    # An API key has no refresh token and no quota endpoint: these parts of the contract read so.

    def test_contract_parses_its_credential_file(  # type: ignore[override]
        self, adapter: GeminiAdapter, account: UpstreamAccount
    ) -> None:
        imported = adapter.parse_credentials(account.credentials)
        assert imported.provider == "gemini" and imported.expires_at is None
        assert imported.bundle == {"api_key": account.credentials["api_key"]}
        assert imported.identity.subject and account.credentials["api_key"] not in imported.identity.subject

    async def test_contract_refresh_gives_fresh_credentials(  # type: ignore[override]
        self, adapter: GeminiAdapter, bundle: dict[str, Any]
    ) -> None:
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert failed.value.permanent and failed.value.code == "unauthorized"

    async def test_contract_dead_refresh_token_is_permanent(  # type: ignore[override]
        self, adapter: GeminiAdapter, bundle: dict[str, Any]
    ) -> None:
        await self.test_contract_refresh_gives_fresh_credentials(adapter, bundle)

    async def test_contract_transient_refresh_failure_is_not_permanent(  # type: ignore[override]
        self, adapter: GeminiAdapter, bundle: dict[str, Any]
    ) -> None:
        await self.test_contract_refresh_gives_fresh_credentials(adapter, bundle)

    async def test_contract_refresh_retry_after_is_kept(  # type: ignore[override]
        self, adapter: GeminiAdapter, bundle: dict[str, Any]
    ) -> None:
        await self.test_contract_refresh_gives_fresh_credentials(adapter, bundle)

    async def test_contract_reads_quota(  # type: ignore[override]
        self, adapter: GeminiAdapter, bundle: dict[str, Any]
    ) -> None:
        assert await adapter.read_quota(bundle, 0.0) == ("api_key", ())


def test_paid_1_gemini_plugin_is_metered_with_the_key_check() -> None:
    assert PROVIDER.name == "gemini" and PROVIDER.billing is Billing.METERED
    assert issubclass(GeminiAdapter, ChecksCredentials)


def test_paid_1_gemini_base_url_is_kept_only_when_given() -> None:
    own = parse_credentials({"api_key": "AIzaSyTest1234567", "base_url": "https://proxy.example/"})
    assert own.bundle == {"api_key": "AIzaSyTest1234567", "base_url": "https://proxy.example"}
    default = parse_credentials({"api_key": "AIzaSyTest1234567"})
    assert "base_url" not in default.bundle  # it follows SUBLANE_GEMINI_BASE_URL


def test_paid_1_gemini_requests_go_to_the_model_path_with_the_key() -> None:
    adapter = GeminiAdapter(base_url="https://g.example/", http=httpx.AsyncClient(), metadata_timeout=1)
    bundle = {"api_key": "AIzaSyTest1234567"}
    body = {"model": "gemini-2.5-pro", "contents": [], "systemInstruction": {"parts": [{"text": "x"}]}}
    stream = adapter.build_request(
        UpstreamOperation.STREAM, bundle, body, {"x-goog-api-key": "sk-lane"}, bound=True
    )
    assert stream.url == "https://g.example/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert stream.headers["x-goog-api-key"] == "AIzaSyTest1234567"
    assert b'"model"' not in stream.content
    count = adapter.build_request(UpstreamOperation.COUNT_TOKENS, bundle, body, {}, bound=False)
    assert count.url.endswith("/models/gemini-2.5-pro:countTokens")
    assert b'"generateContentRequest":{"model":"models/gemini-2.5-pro"' in count.content
    plain = adapter.build_request(
        UpstreamOperation.COUNT_TOKENS, bundle, {"model": "m", "contents": []}, {}, bound=False
    )
    assert plain.content == b'{"contents":[]}'


async def test_paid_1_gemini_models_are_read_page_by_page_and_only_generate_content(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    async with httpx.AsyncClient() as http:
        adapter = GeminiAdapter(base_url=sim.gemini_base_url, http=http, metadata_timeout=5)
        bundle = dict(parse_credentials(account.credentials).bundle)
        models = await adapter.list_models(bundle)
    assert MODEL in models and "gemini-embedding-001" not in models  # it lists, but serves no calls
    pages = sim.requests(endpoint="gemini.models")
    assert len(pages) == 1 and pages[0].query == "pageSize=1000"


async def test_paid_1_gemini_refused_key_fails_the_check(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    sim.revoke_api_key(account.id)
    async with httpx.AsyncClient() as http:
        adapter = GeminiAdapter(base_url=sim.gemini_base_url, http=http, metadata_timeout=5)
        with pytest.raises(CredentialsRefused) as refused:
            await adapter.check_credentials(parse_credentials(account.credentials))
    assert account.api_key not in str(refused.value)


async def test_paid_4_gemini_wrong_key_is_unauthorized_not_a_bad_request(sim: Simulator) -> None:
    """The Gemini API answers a wrong key with 400 INVALID_ARGUMENT / API_KEY_INVALID."""
    account = sim.create_account("gemini")
    async with httpx.AsyncClient() as http:
        adapter = GeminiAdapter(base_url=sim.gemini_base_url, http=http, metadata_timeout=5)
        body = {"model": MODEL, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        wrong = {"api_key": "AIzaSyWrongWrongWrong0000000000000000000"}
        request = adapter.build_request(UpstreamOperation.JSON, wrong, body, {}, bound=False)
        answer = await http.send(as_httpx(http, request))
    assert answer.status_code == 400 and b"API_KEY_INVALID" in answer.content
    failure = adapter.classify_failure(400, dict(answer.headers), answer.content, 0.0)
    assert failure.kind is FailureKind.UNAUTHORIZED and failure.code == "unauthorized"
    plain = adapter.classify_failure(400, {}, b'{"error":{"code":400,"status":"INVALID_ARGUMENT"}}', 0.0)
    assert plain.kind is FailureKind.CLIENT_ERROR  # any other 400 is the request's own fault
    assert account.api_key  # the account exists: only the key was wrong


async def test_paid_4_gemini_429_retry_delay_is_the_retry_after(sim: Simulator) -> None:
    account = sim.create_account("gemini")
    sim.script(account.id, Behaviour.error(429, retry_delay="37s"))
    async with httpx.AsyncClient() as http:
        adapter = GeminiAdapter(base_url=sim.gemini_base_url, http=http, metadata_timeout=5)
        bundle = dict(parse_credentials(account.credentials).bundle)
        body = {"model": MODEL, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        request = adapter.build_request(UpstreamOperation.JSON, bundle, body, {}, bound=False)
        answer = await http.send(as_httpx(http, request))
    assert answer.status_code == 429 and "retry-after" not in answer.headers
    assert not [name for name in answer.headers if "ratelimit" in name]  # the Gemini API sends none
    failure = adapter.classify_failure(429, dict(answer.headers), answer.content, 0.0)
    assert failure.kind is FailureKind.RATE_LIMITED and failure.retry_after == 37
    assert failure.code == "RESOURCE_EXHAUSTED"


def test_paid_1_a_base_url_pasted_with_its_version_is_the_host() -> None:
    """The calls add ``/v1beta``: a base URL pasted with a version path (``/v1beta``, ``/v1``) is
    stored without it, and an account stored with one before, or the setting, is served without."""
    for pasted in (
        "https://generativelanguage.googleapis.com/v1beta",
        "https://generativelanguage.googleapis.com/v1beta/",
        "https://generativelanguage.googleapis.com/v1",
    ):
        own = parse_credentials({"api_key": "AIzaSyTest12345678", "base_url": pasted})
        assert own.bundle["base_url"] == "https://generativelanguage.googleapis.com"
    adapter = GeminiAdapter(
        base_url="http://127.0.0.1:9/g/v1beta/", http=httpx.AsyncClient(), metadata_timeout=1
    )
    body = {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    keyed = adapter.build_request(
        UpstreamOperation.JSON, {"api_key": "AIzaSyTest12345678"}, body, {}, bound=False
    )
    assert keyed.url == "http://127.0.0.1:9/g/v1beta/models/gemini-2.5-flash:generateContent"
    stored_before = {"api_key": "AIzaSyTest12345678", "base_url": "https://proxy.example/v1beta"}
    request = adapter.build_request(UpstreamOperation.JSON, stored_before, body, {}, bound=False)
    assert request.url == "https://proxy.example/v1beta/models/gemini-2.5-flash:generateContent"
