"""Credential files of the codex provider, parsed through the registry its entry point joins."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from sublane_providers import CredentialFormatError, parse_credentials


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


HUGE = 10**400


@pytest.mark.parametrize(
    "data",
    [
        codex_auth_json(access_token=fake_jwt({"exp": HUGE})),
    ],
)
def test_ops_1_a_400_digit_timestamp_is_no_expiry(data: dict[str, Any]) -> None:
    # Found by probing: a 400-digit expiry in an imported credential file gave a 500 (OverflowError).
    assert parse_credentials("codex", data).expires_at is None
