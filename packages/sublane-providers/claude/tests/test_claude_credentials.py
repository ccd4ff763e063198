"""Credential files of the claude provider, parsed through the registry its entry point joins."""

from __future__ import annotations

from typing import Any

import pytest

from sublane_providers import CredentialFormatError, parse_credentials


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


HUGE = 10**400


@pytest.mark.parametrize(
    "data",
    [
        {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": HUGE}},
        {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": float("inf")}},
        {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": "9999-12-31T23:59"}},
    ],
)
def test_ops_1_a_400_digit_timestamp_is_no_expiry(data: dict[str, Any]) -> None:
    # Found by probing: a 400-digit expiry in an imported credential file gave a 500 (OverflowError).
    assert parse_credentials("claude", data).expires_at is None


def test_bulk_3_claude_reads_the_bundle_it_stores() -> None:
    """An account bundle carries the stored bundle; its import parses it again (BULK-3)."""
    data = {"claudeAiOauth": {"accessToken": "a-1", "refreshToken": "r-1", "expiresAt": 1_767_396_165_210}}
    stored = parse_credentials("claude", data).bundle
    again = parse_credentials("claude", stored)
    assert again.bundle == stored and again.expires_at == pytest.approx(1_767_396_165.21)
    with pytest.raises(CredentialFormatError):
        parse_credentials("claude", {**stored, "refresh_token": 7})
