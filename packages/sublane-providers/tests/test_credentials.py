from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from sublane_providers import CredentialFormatError, UnknownProviderError, parse_credentials, provider_names


def fake_jwt(claims: dict[str, Any]) -> str:
    def segment(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{segment({'alg': 'none'})}.{segment(claims)}.sig"


ID_TOKEN = fake_jwt(
    {
        "email": "dev@example.com",
        "https://api.openai.com/auth": {
            "chatgpt_account_id": "acct-123",
            "chatgpt_plan_type": "pro",
            "chatgpt_user_id": "user-9",
        },
    }
)
ACCESS_TOKEN = fake_jwt({"exp": 1_900_000_000, "sub": "x"})


def codex_auth_json(**tokens: Any) -> dict[str, Any]:
    base = {"id_token": ID_TOKEN, "access_token": ACCESS_TOKEN, "refresh_token": "rt_abc", "account_id": None}
    base.update(tokens)
    return {
        "auth_mode": "chatgpt",
        "OPENAI_API_KEY": None,
        "tokens": base,
        "last_refresh": "2026-01-01T00:00:00Z",
    }


def test_registry_lists_the_three_providers() -> None:
    assert provider_names() == ("codex", "claude", "antigravity")
    with pytest.raises(UnknownProviderError):
        parse_credentials("gemini", {})


def test_codex_auth_json_identity_comes_from_the_id_token() -> None:
    imported = parse_credentials("codex", codex_auth_json())
    assert imported.identity.email == "dev@example.com"
    assert imported.identity.plan == "pro"
    assert imported.identity.subject == "acct-123"
    assert imported.expires_at == 1_900_000_000
    assert imported.bundle["refresh_token"] == "rt_abc"
    assert imported.bundle["account_id"] == "acct-123"
    assert imported.bundle["last_refresh"] == 1_767_225_600


def test_codex_explicit_account_id_wins_and_flat_shape_is_accepted() -> None:
    flat = {
        "type": "codex",
        "access_token": ACCESS_TOKEN,
        "refresh_token": "rt",
        "account_id": "acct-x",
        "email": "a@b",
    }
    imported = parse_credentials("codex", flat)
    assert imported.identity.subject == "acct-x"
    assert imported.identity.email == "a@b"


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"tokens": None, "OPENAI_API_KEY": "sk-xxxxxxxxxxxxxxxxxxxxxxxx"},
        {"tokens": "nope"},
        {"tokens": {"access_token": ACCESS_TOKEN}},
        {"tokens": {"access_token": 5, "refresh_token": "rt"}},
        {"tokens": {"access_token": "has space", "refresh_token": "rt"}},
        {"tokens": {"access_token": ACCESS_TOKEN, "refresh_token": "rt", "id_token": "not-a-jwt"}},
    ],
)
def test_codex_malformed_files_are_refused_without_echoing_secrets(data: dict[str, Any]) -> None:
    with pytest.raises(CredentialFormatError) as info:
        parse_credentials("codex", data)
    assert ACCESS_TOKEN not in str(info.value)
    assert "sk-x" not in str(info.value)


def test_claude_credentials_json() -> None:
    data = {
        "claudeAiOauth": {
            "accessToken": "sk-ant-oat01-abc",
            "refreshToken": "sk-ant-ort01-def",
            "expiresAt": 1_767_396_165_210,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "max",
            "rateLimitTier": "default_claude_max_20x",
        }
    }
    imported = parse_credentials("claude", data)
    assert imported.expires_at == pytest.approx(1_767_396_165.21)
    assert imported.identity.plan == "max"
    assert imported.bundle["scopes"] == ["user:inference", "user:profile"]


@pytest.mark.parametrize(
    "data",
    [
        {"claudeAiOauth": {"accessToken": "a"}},
        {"claudeAiOauth": []},
        {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "scopes": "user:inference"}},
        {"tokens": {}},
    ],
)
def test_claude_malformed_files_are_refused(data: dict[str, Any]) -> None:
    with pytest.raises(CredentialFormatError):
        parse_credentials("claude", data)


def test_antigravity_token_file() -> None:
    data = {
        "type": "antigravity",
        "access_token": "ya29.abc",
        "refresh_token": "1//refresh",
        "expires_in": 3599,
        "timestamp": 1_800_000_000_000,
        "email": "g@example.com",
        "project_id": "proj-1",
    }
    imported = parse_credentials("antigravity", data)
    assert imported.expires_at == 1_800_003_599
    assert imported.identity.email == "g@example.com"
    assert imported.identity.subject == "proj-1"


def test_antigravity_google_oauth_file_with_expiry_date_and_id_token() -> None:
    data = {
        "access_token": "ya29.abc",
        "refresh_token": "1//refresh",
        "expiry_date": 1_800_000_000_000,
        "id_token": fake_jwt({"email": "from-id@example.com"}),
    }
    imported = parse_credentials("antigravity", data)
    assert imported.expires_at == 1_800_000_000
    assert imported.identity.email == "from-id@example.com"


def test_antigravity_refresh_token_alone_is_enough() -> None:
    imported = parse_credentials("antigravity", {"refresh_token": "1//r"})
    assert imported.expires_at is None
    assert imported.bundle["access_token"] is None


@pytest.mark.parametrize(
    "data",
    [{"access_token": "ya29.x"}, {"refresh_token": "1//r", "type": "service_account"}, {"refresh_token": ""}],
)
def test_antigravity_malformed_files_are_refused(data: dict[str, Any]) -> None:
    with pytest.raises(CredentialFormatError):
        parse_credentials("antigravity", data)


HUGE = 10**400


@pytest.mark.parametrize(
    ("provider", "data"),
    [
        ("claude", {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": HUGE}}),
        ("claude", {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": float("inf")}}),
        ("claude", {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r",
                                      "expiresAt": "9999-12-31T23:59"}}),
        ("antigravity", {"access_token": "a", "refresh_token": "r", "expiry_date": HUGE}),
        ("antigravity", {"access_token": "a", "refresh_token": "r", "timestamp": 1_800_000_000_000,
                         "expires_in": HUGE}),
        ("codex", codex_auth_json(access_token=fake_jwt({"exp": HUGE}))),
    ],
)  # fmt: skip
def test_ops_1_a_400_digit_timestamp_is_no_expiry(provider: str, data: dict[str, Any]) -> None:
    # Found by probing: a 400-digit expiry in an imported credential file gave a 500 (OverflowError).
    imported = parse_credentials(provider, data)
    assert imported.expires_at is None


def test_ops_1_an_unparsable_pasted_address_is_a_callback_error() -> None:
    # Found by probing: oauth/complete with "http://[/?code=…" gave a 500 (ValueError from urlsplit).
    from sublane_providers import PastedCallbackError, code_from_pasted

    with pytest.raises(PastedCallbackError, match="not a valid address"):
        code_from_pasted("http://[/?code=abc&state=s", "s")
