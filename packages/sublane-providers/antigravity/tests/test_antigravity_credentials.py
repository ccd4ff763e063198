"""Credential files of the antigravity provider, parsed through the registry its entry point joins."""

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
    "data",
    [
        {"access_token": "a", "refresh_token": "r", "expiry_date": HUGE},
        {"access_token": "a", "refresh_token": "r", "timestamp": 1_800_000_000_000, "expires_in": HUGE},
    ],
)
def test_ops_1_a_400_digit_timestamp_is_no_expiry(data: dict[str, Any]) -> None:
    # Found by probing: a 400-digit expiry in an imported credential file gave a 500 (OverflowError).
    assert parse_credentials("antigravity", data).expires_at is None
