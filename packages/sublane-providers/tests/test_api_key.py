"""The API-key kit every metered provider shares (PAID-1, PAID-4)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session

from sublane_core import (
    AUTH_OK,
    Account,
    CredentialCipher,
    FakeClock,
    UpstreamOperation,
    WireProtocol,
    create_db_engine,
    upgrade_database,
)
from sublane_providers import (
    ChecksCredentials,
    CredentialFormatError,
    Credentials,
    CredentialsRefused,
    CredentialVault,
    FailureKind,
    RefreshedCredentials,
    RefreshFailed,
    RenewsCredentials,
    StreamState,
    UpstreamRequest,
)
from sublane_providers.kit import (
    ApiKeyAdapter,
    JsonStreamObserver,
    api_error_fields,
    classify_api_failure,
    parse_api_key_credentials,
    parse_duration,
    rate_limit_windows,
    safe_message,
)

NOW = 1_800_000_000.0


def test_paid_1_api_key_credentials_take_a_key_and_a_base_url() -> None:
    imported = parse_api_key_credentials(
        "openai", {"api_key": "sk-test-123456"}, default_base_url="https://api.openai.com/v1/"
    )
    assert imported.bundle == {"api_key": "sk-test-123456", "base_url": "https://api.openai.com/v1"}
    assert imported.expires_at is None
    assert "sk-test" not in repr(imported.identity)  # the fingerprint reveals nothing of the key
    own = parse_api_key_credentials(
        "openai-compatible",
        {"api_key": "k-1234567", "base_url": "http://127.0.0.1:8000/v1", "models": ["qwen", "qwen"]},
        default_base_url=None,
        accepts_models=True,
    )
    assert own.bundle["models"] == ["qwen"]


@pytest.mark.parametrize(
    "credentials",
    [
        {},
        {"api_key": ""},
        {"api_key": "has space"},
        {"api_key": "sk-1234567", "base_url": "ftp://host/v1"},
        {"api_key": "sk-1234567", "base_url": "https://user:pw@host/v1"},
        {"api_key": "sk-1234567", "base_url": "https://host/v1?x=1"},
        {"api_key": "sk-1234567", "base_url": 5},
        {"api_key": "sk-1234567", "base_url": "http://exa\u00a0mple.com/v1"},  # httpx cannot send there
    ],
)
def test_paid_1_unusable_api_key_credentials_are_refused(credentials: dict[str, Any]) -> None:
    with pytest.raises(CredentialFormatError) as refused:
        parse_api_key_credentials("openai", credentials, default_base_url="https://api.openai.com/v1")
    assert "1234567" not in str(refused.value) and "pw" not in str(refused.value)


def test_paid_1_a_required_base_url_must_be_given() -> None:
    with pytest.raises(CredentialFormatError):
        parse_api_key_credentials("openai-compatible", {"api_key": "k-1234567"}, default_base_url=None)
    with pytest.raises(CredentialFormatError):
        parse_api_key_credentials(
            "openai-compatible",
            {"api_key": "k-1234567", "base_url": "http://h/v1", "models": []},
            default_base_url=None,
            accepts_models=True,
        )


def test_paid_4_openai_rate_limit_headers_are_quota_windows() -> None:
    headers = {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1m30s",
        "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-tokens": "15000",
        "x-ratelimit-reset-tokens": "20ms",
    }
    requests, tokens = rate_limit_windows(headers, NOW)
    assert (requests.window, requests.used_percent, requests.limit_reached) == ("requests", 100.0, True)
    assert requests.resets_at == NOW + 90
    assert (tokens.window, tokens.used_percent, tokens.limit_reached) == ("tokens", 50.0, False)
    assert tokens.resets_at == pytest.approx(NOW + 0.02)


def test_paid_4_anthropic_rate_limit_headers_are_quota_windows() -> None:
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2027-01-15T08:00:00Z",
        "anthropic-ratelimit-input-tokens-limit": "40000",
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": "2027-01-15T08:00:30Z",
        "anthropic-ratelimit-unified-5h-utilization": "0.5",  # a subscription's header: not ours
    }
    windows = {window.window: window for window in rate_limit_windows(headers, NOW)}
    assert set(windows) == {"requests", "input_tokens"}
    assert windows["requests"].used_percent == pytest.approx(2.0)
    assert windows["input_tokens"].limit_reached
    reset = dt.datetime(2027, 1, 15, 8, 0, 30, tzinfo=dt.UTC).timestamp()
    assert windows["input_tokens"].resets_at == reset


def test_paid_4_durations_read_as_openai_writes_them() -> None:
    assert parse_duration("6m0s") == 360
    assert parse_duration("1h2m3.5s") == 3723.5
    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("2") == 2
    assert parse_duration("soon") is None


def test_paid_4_a_401_is_unauthorized_and_names_no_key() -> None:
    body = (
        b'{"error":{"message":"Incorrect API key provided: sk-proj-abc****xyz9.","code":"invalid_api_key"}}'
    )
    failure = classify_api_failure(401, {}, body, NOW)
    assert failure.kind is FailureKind.UNAUTHORIZED and failure.code == "unauthorized"
    assert "sk-" not in failure.message


def test_paid_4_a_429_cools_for_its_retry_after() -> None:
    limited = classify_api_failure(429, {"retry-after": "17"}, b'{"error":{"type":"rate_limit_error"}}', NOW)
    assert limited.kind is FailureKind.RATE_LIMITED and limited.retry_after == 17
    millis = classify_api_failure(429, {"retry-after-ms": "2500"}, b"{}", NOW)
    assert millis.retry_after == 2.5
    credit = classify_api_failure(
        429,
        {},
        b'{"error":{"code":"insufficient_quota"}}',
        NOW,
        exhausted_codes=frozenset({"insufficient_quota"}),
    )
    assert credit.kind is FailureKind.QUOTA_EXHAUSTED


def test_paid_4_a_402_payment_required_is_the_keys_credit_used_up() -> None:
    """OpenAI-compatible servers with prepaid credit (DeepSeek's "Insufficient Balance", OpenRouter's
    "Insufficient credits") answer 402: the key is spent, not the request wrong."""
    body = b'{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null}}'
    spent = classify_api_failure(402, {}, body, NOW)
    assert spent.kind is FailureKind.QUOTA_EXHAUSTED and spent.message == "Insufficient Balance"


def test_paid_4_other_answers_are_transient_or_the_requests_own_fault() -> None:
    assert classify_api_failure(529, {}, b"", NOW).kind is FailureKind.TRANSIENT
    assert classify_api_failure(503, {}, b"", NOW).retryable
    google = b'{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}'
    relayed = classify_api_failure(400, {}, google, NOW)
    assert (relayed.kind, relayed.code, relayed.message) == (
        FailureKind.CLIENT_ERROR,
        "INVALID_ARGUMENT",
        "Invalid JSON payload",
    )


def test_paid_1_error_texts_lose_anything_shaped_like_a_key() -> None:
    text = safe_message("bad key AIzaSyA-1234567890abcdef and Bearer sk-ant-api03-XYZ123456 here")
    assert "AIza" not in text and "sk-ant" not in text and text.endswith("here")
    assert safe_message("Incorrect API key provided: sk-proj-ab****yz9.") == "Incorrect API key provided: ***"
    code, message = api_error_fields(b'{"error": {"code": "sk-live-0123456789abcdef", "message": "no"}}')
    assert code == "***" and message == "no"  # a code is relayed and watched too


class _Listing(ApiKeyAdapter):
    """An API-key adapter whose model list answers what a test says."""

    name = "listing"
    protocol = WireProtocol.CHAT_COMPLETIONS
    operations = frozenset({UpstreamOperation.JSON})

    def __init__(self, answer: list[str] | Exception) -> None:
        self.answer = answer

    @staticmethod
    def parse_credentials(data: Mapping[str, Any]) -> Any:
        return parse_api_key_credentials("listing", data, default_base_url="http://127.0.0.1:9/v1")

    def build_request(self, *args: Any, **kwargs: Any) -> UpstreamRequest:
        raise NotImplementedError

    def new_observer(self, state: StreamState | None = None) -> JsonStreamObserver:
        raise NotImplementedError

    async def list_models(self, bundle: Mapping[str, Any]) -> list[str]:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _status_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://127.0.0.1:9/v1/models")
    return httpx.HTTPStatusError("refused", request=request, response=httpx.Response(status, request=request))


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (_status_error(401), "refused the API key"),
        (_status_error(500), "HTTP 500"),
        (httpx.ConnectError("no"), "could not be reached"),
        ([], "lists no model"),
    ],
)
def test_paid_1_a_key_that_cannot_list_models_is_refused(answer: list[str] | Exception, reason: str) -> None:
    adapter = _Listing(answer)
    assert isinstance(adapter, ChecksCredentials)
    imported = adapter.parse_credentials({"api_key": "sk-secret-777777"})
    with pytest.raises(CredentialsRefused) as refused:
        asyncio.run(adapter.check_credentials(imported))
    assert reason in str(refused.value) and "777777" not in str(refused.value)
    assert asyncio.run(_Listing(["m"]).check_credentials(imported)) is imported


def test_paid_4_an_api_key_has_no_refresh() -> None:
    with pytest.raises(RefreshFailed) as failed:
        asyncio.run(_Listing(["m"]).refresh({"api_key": "sk-1234567"}))
    assert failed.value.permanent and failed.value.code == "unauthorized"


def test_paid_1_an_api_key_is_handed_out_as_it_is(tmp_path: Path) -> None:
    """The vault hands an API-key bundle (no access token, no expiry) out without a refresh: one
    would fail for good and mark a working key ``reauth_required``."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'vault.db'}")
    upgrade_database(engine)
    cipher, clock = CredentialCipher(b"k" * 32), FakeClock()
    refresher = _Listing(["m"])
    vault = CredentialVault(engine, cipher, clock, {"metered": refresher})
    with Session(engine) as db:
        account = Account(
            provider="metered",
            name="key",
            credentials=cipher.encrypt({"api_key": "sk-1234567", "base_url": "https://api.example"}),
            credentials_expires_at=None,
            created_at=clock.time(),
            updated_at=clock.time(),
        )
        db.add(account)
        db.commit()
        assert account.id is not None
        account_id = account.id
    handed = asyncio.run(vault.get(account_id, "metered"))
    assert handed.bundle["api_key"] == "sk-1234567"
    assert not vault.needs_reauth(account_id)
    with Session(engine) as db:
        stored = db.get(Account, account_id)
        assert stored is not None and stored.auth_state == AUTH_OK
    engine.dispose()


def test_paid_1_credentials_and_requests_never_show_the_key_in_their_repr() -> None:
    """A bundle or an upstream request in an exception's message, an assertion or a log line never
    carries the key (nor an egress proxy's password)."""
    key = "sk-proj-NeverInARepr0123456789"
    imported = parse_api_key_credentials(
        "openai", {"api_key": key}, default_base_url="https://api.openai.com/v1"
    )
    request = UpstreamRequest(
        "POST", "https://api.openai.com/v1/responses", {"authorization": f"Bearer {key}"}, b"{}"
    )
    handed = Credentials(1, imported.bundle, 1, "http://user:proxy-pass-123@proxy:3128")
    refreshed = RefreshedCredentials(dict(imported.bundle), None)
    for shown in (repr(imported), repr(request), repr(handed), repr(refreshed), str(request)):
        assert key not in shown and "proxy-pass-123" not in shown
    assert request.headers["authorization"] == f"Bearer {key}" and handed.bundle["api_key"] == key


def test_paid_4_a_new_key_given_alone_keeps_the_accounts_server_and_models() -> None:
    adapter = _Listing(["m"])
    assert isinstance(adapter, RenewsCredentials)
    stored = {"api_key": "old-key-123", "base_url": "http://10.0.0.5:8000/v1", "models": ["qwen"]}
    assert adapter.renewal_credentials(stored, {"api_key": "new-key-456"}) == {
        "api_key": "new-key-456",
        "base_url": "http://10.0.0.5:8000/v1",
        "models": ["qwen"],
    }
    moved = adapter.renewal_credentials(stored, {"api_key": "new-key-456", "base_url": "http://h/v1"})
    assert moved["base_url"] == "http://h/v1"
    assert adapter.renewal_credentials({"api_key": "old-key-123"}, {"api_key": "k"}) == {"api_key": "k"}
