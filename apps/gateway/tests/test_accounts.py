from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, select

from sublane_core import AccountCooldown, CredentialCipher, load_or_create_key
from sublane_gateway.testing import Gateway


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


ACCESS = _jwt({"exp": 1_900_000_000, "note": "access-token-PLAINTEXT-MARKER"})
REFRESH = "rt-PLAINTEXT-MARKER-0123456789"
CODEX_AUTH_JSON = {
    "auth_mode": "chatgpt",
    "OPENAI_API_KEY": None,
    "tokens": {
        "id_token": _jwt(
            {
                "email": "dev@example.com",
                "https://api.openai.com/auth": {"chatgpt_account_id": "acct-42", "chatgpt_plan_type": "plus"},
            }
        ),
        "access_token": ACCESS,
        "refresh_token": REFRESH,
        "account_id": None,
    },
    "last_refresh": "2026-11-01T00:00:00Z",
}
CLAUDE_FILE = {
    "claudeAiOauth": {
        "accessToken": "sk-ant-oat01-PLAINTEXT-MARKER",
        "refreshToken": "sk-ant-ort01-PLAINTEXT-MARKER",
        "expiresAt": 1_900_000_000_000,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max",
    }
}
ANTIGRAVITY_FILE = {
    "type": "antigravity",
    "access_token": "ya29.PLAINTEXT-MARKER",
    "refresh_token": "1//PLAINTEXT-MARKER",
    "expires_in": 3599,
    "timestamp": 1_900_000_000_000,
    "email": "g@example.com",
    "project_id": "proj-7",
}


def _import(
    admin: httpx.Client, provider: str, name: str, credentials: dict[str, Any], **extra: Any
) -> httpx.Response:
    return admin.post(
        "/api/accounts/import", json={"provider": provider, "name": name, "credentials": credentials, **extra}
    )


def test_adm_1_imported_codex_account_defaults_to_30_and_shows_identity(admin: httpx.Client) -> None:
    response = _import(admin, "codex", "team-plus", CODEX_AUTH_JSON, group_ids=[1])
    assert response.status_code == 201, response.text
    account = response.json()
    assert account["provider"] == "codex"
    assert account["max_concurrency"] == 30
    assert account["identity"] == {"email": "dev@example.com", "plan": "plus", "subject": "acct-42"}
    assert account["auth_state"] == "ok"
    assert account["enabled"] is True
    assert account["group_ids"] == [1]
    assert account["credentials_expires_at"] == 1_900_000_000
    assert "PLAINTEXT-MARKER" not in response.text
    listed = admin.get("/api/accounts")
    assert [item["name"] for item in listed.json()["items"]] == ["team-plus"]
    assert "PLAINTEXT-MARKER" not in listed.text and "credentials" not in listed.json()["items"][0]


@pytest.mark.parametrize(
    ("provider", "credentials", "identity"),
    [
        ("claude", CLAUDE_FILE, {"email": None, "plan": "max", "subject": None}),
        ("antigravity", ANTIGRAVITY_FILE, {"email": "g@example.com", "plan": None, "subject": "proj-7"}),
    ],
)
def test_claude_and_antigravity_files_import(
    admin: httpx.Client, provider: str, credentials: dict[str, Any], identity: dict[str, Any]
) -> None:
    response = _import(admin, provider, f"{provider}-1", credentials)
    assert response.status_code == 201, response.text
    assert response.json()["identity"] == identity
    assert "PLAINTEXT-MARKER" not in response.text


def test_cred_9_database_file_holds_no_plaintext_token(
    gateway: Gateway, admin: httpx.Client, data_dir: Path
) -> None:
    for provider, credentials in (
        ("codex", CODEX_AUTH_JSON),
        ("claude", CLAUDE_FILE),
        ("antigravity", ANTIGRAVITY_FILE),
    ):
        assert _import(admin, provider, provider, credentials).status_code == 201
    with Session(gateway.engine) as db:
        db.exec(select(AccountCooldown)).all()
        db.connection().exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = b"".join(path.read_bytes() for path in data_dir.glob("sublane.db*"))
    assert b"PLAINTEXT-MARKER" not in raw
    assert REFRESH.encode() not in raw
    # ...but the key beside it opens them.
    cipher = CredentialCipher(load_or_create_key(data_dir / "credentials.key", create=False))
    with Session(gateway.engine) as db:
        sealed = (
            db.connection()
            .exec_driver_sql("SELECT credentials FROM accounts WHERE provider='codex'")
            .scalar_one()
        )
    assert cipher.decrypt(sealed)["refresh_token"] == REFRESH


@pytest.mark.parametrize(
    ("provider", "credentials", "code"),
    [
        ("nope", CODEX_AUTH_JSON, "unknown_provider"),
        ("openai", CODEX_AUTH_JSON, "invalid_credentials_file"),  # PAID-1: it wants an api_key
        ("codex", CLAUDE_FILE, "invalid_credentials_file"),
        ("claude", CODEX_AUTH_JSON, "invalid_credentials_file"),
        ("antigravity", CLAUDE_FILE, "invalid_credentials_file"),
        ("codex", {"tokens": {"access_token": ACCESS}}, "invalid_credentials_file"),
        (
            "codex",
            {"tokens": None, "OPENAI_API_KEY": "sk-proj-abcdefghijklmnopqrstuv"},
            "invalid_credentials_file",
        ),
    ],
)
def test_wrong_credential_files_are_refused_without_echo(
    admin: httpx.Client, provider: str, credentials: dict[str, Any], code: str
) -> None:
    response = _import(admin, provider, "acct", credentials)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert "PLAINTEXT-MARKER" not in response.text and "sk-proj" not in response.text
    assert admin.get("/api/accounts").json()["items"] == []


def test_bad_account_input(admin: httpx.Client) -> None:
    assert _import(admin, "codex", "a", CODEX_AUTH_JSON).status_code == 201
    duplicate = _import(admin, "codex", "a", CODEX_AUTH_JSON)
    assert duplicate.status_code == 409 and duplicate.json()["error"]["code"] == "name_taken"
    unknown_group = _import(admin, "codex", "b", CODEX_AUTH_JSON, group_ids=[99])
    assert unknown_group.status_code == 400
    not_an_object = admin.post(
        "/api/accounts/import", json={"provider": "codex", "name": "c", "credentials": "x"}
    )
    assert not_an_object.status_code == 400
    assert [item["name"] for item in admin.get("/api/accounts").json()["items"]] == ["a"]


@pytest.mark.parametrize("value", [0, 1001, -1, 2.5, "10", None])
def test_adm_1_limits_outside_1_to_1000_are_refused(admin: httpx.Client, value: object) -> None:
    account_id = _import(admin, "codex", "a", CODEX_AUTH_JSON).json()["id"]
    response = admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": value})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert admin.get(f"/api/accounts/{account_id}").json()["max_concurrency"] == 30


@pytest.mark.parametrize("value", [1, 1000])
def test_adm_1_limits_within_1_to_1000_are_stored(admin: httpx.Client, value: int) -> None:
    account_id = _import(admin, "codex", "a", CODEX_AUTH_JSON).json()["id"]
    response = admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": value})
    assert response.status_code == 200
    assert response.json() == {"id": account_id, "max_concurrency": value}
    assert admin.get(f"/api/accounts/{account_id}").json()["max_concurrency"] == value


def test_enable_and_disable_advance_the_lifecycle_revision(admin: httpx.Client) -> None:
    account_id = _import(admin, "codex", "a", CODEX_AUTH_JSON).json()["id"]
    renamed = admin.patch(f"/api/accounts/{account_id}", json={"name": "renamed"}).json()
    assert renamed["name"] == "renamed" and renamed["lifecycle_revision"] == 1
    disabled = admin.patch(f"/api/accounts/{account_id}", json={"enabled": False}).json()
    assert disabled["enabled"] is False and disabled["lifecycle_revision"] == 2
    same = admin.patch(f"/api/accounts/{account_id}", json={"enabled": False}).json()
    assert same["lifecycle_revision"] == 2
    enabled = admin.patch(f"/api/accounts/{account_id}", json={"enabled": True}).json()
    assert enabled["enabled"] is True and enabled["lifecycle_revision"] == 3


def test_reimporting_credentials_reauthorizes(gateway: Gateway, admin: httpx.Client) -> None:
    account_id = _import(admin, "codex", "a", CODEX_AUTH_JSON).json()["id"]
    with Session(gateway.engine) as db:
        db.connection().exec_driver_sql(
            "UPDATE accounts SET auth_state='reauth_required', auth_error='invalid_grant' WHERE id=?",
            (account_id,),
        )
        db.commit()
    wrong_provider = admin.post(f"/api/accounts/{account_id}/credentials", json={"credentials": CLAUDE_FILE})
    assert wrong_provider.status_code == 400
    response = admin.post(f"/api/accounts/{account_id}/credentials", json={"credentials": CODEX_AUTH_JSON})
    assert response.status_code == 200
    assert response.json()["auth_state"] == "ok" and response.json()["auth_error"] is None
    assert response.json()["lifecycle_revision"] == 2


def test_delete_removes_the_account_and_its_runtime_state(gateway: Gateway, admin: httpx.Client) -> None:
    account_id = _import(admin, "codex", "a", CODEX_AUTH_JSON, group_ids=[1]).json()["id"]
    with Session(gateway.engine) as db:
        db.add(
            AccountCooldown(account_id=account_id, model="", until=1e12, reason="rate_limited", updated_at=0)
        )
        db.commit()
    assert admin.delete(f"/api/accounts/{account_id}").status_code == 204
    assert admin.get(f"/api/accounts/{account_id}").status_code == 404
    assert admin.delete(f"/api/accounts/{account_id}").status_code == 404
    assert admin.get("/api/groups").json()["items"][0]["account_ids"] == []
    with Session(gateway.engine) as db:
        assert db.exec(select(AccountCooldown)).all() == []


def test_members_cannot_see_or_change_accounts(gateway: Gateway, admin: httpx.Client) -> None:
    account_id = _import(admin, "codex", "a", CODEX_AUTH_JSON).json()["id"]
    _, member = gateway.member(admin, "bob")
    assert member.get("/api/accounts").status_code == 403
    assert member.get(f"/api/accounts/{account_id}").status_code == 403
    assert _import(member, "codex", "mine", CODEX_AUTH_JSON).status_code == 403
    assert member.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 2}).status_code == 403
    assert member.patch(f"/api/accounts/{account_id}", json={"enabled": False}).status_code == 403
    assert member.delete(f"/api/accounts/{account_id}").status_code == 403
    assert admin.get(f"/api/accounts/{account_id}").json()["enabled"] is True


def test_the_providers_the_web_views_offer_come_from_the_gateway(
    gateway: Gateway, admin: httpx.Client
) -> None:
    answer = admin.get("/api/providers")
    assert answer.status_code == 200
    items, metered = answer.json()["items"][:3], answer.json()["items"][3:]
    assert [item["name"] for item in items] == ["codex", "claude", "antigravity"]
    openai = next(item for item in metered if item["name"] == "openai")  # PAID-1: an API key
    assert openai["sign_in"] is False and openai["subject_label"] == "key" and openai["credential_file"]
    assert all(item["label"] and item["credential_file"] and item["sign_in"] is True for item in items)
    assert items[1]["credential_file"] == "~/.claude/.credentials.json"
    # what an account's identity subject is called, when admins look for it (the web's account cards)
    assert [item["subject_label"] for item in items] == ["", "", "project"]
    assert gateway.client().get("/api/providers").status_code == 401  # signed-in users only


def _with(file: dict[str, Any], where: str, key: str, value: Any) -> dict[str, Any]:
    changed = json.loads(json.dumps(file))
    (changed[where] if where else changed)[key] = value
    return changed


def _post_escaped(admin: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    """``body`` as JSON with every non-ASCII character escaped: a lone surrogate as ``\\ud800``,
    as a client's JSON encoder writes it."""
    return admin.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    ("provider", "credentials"),
    [
        ("claude", _with(CLAUDE_FILE, "claudeAiOauth", "accessToken", "\ud800")),
        ("claude", _with(CLAUDE_FILE, "claudeAiOauth", "refreshToken", "a\x00b")),
        ("codex", _with(CODEX_AUTH_JSON, "tokens", "access_token", "\ud800")),
        ("antigravity", _with(ANTIGRAVITY_FILE, "", "refresh_token", "1//日本")),
    ],
)
def test_ops_1_a_token_no_header_can_carry_is_refused_at_import_and_at_reauthorization(
    admin: httpx.Client, provider: str, credentials: dict[str, Any]
) -> None:
    """Found by a bad-input sweep: a lone surrogate in a token was a 500 at import (the database
    cannot store it) and, for Claude, at every call (the header cannot carry it)."""
    body = {"provider": provider, "name": "acct", "credentials": credentials}
    refused = _post_escaped(admin, "/api/accounts/import", body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "invalid_credentials_file"
    assert admin.get("/api/accounts").json()["items"] == []
    good = {"claude": CLAUDE_FILE, "codex": CODEX_AUTH_JSON, "antigravity": ANTIGRAVITY_FILE}[provider]
    created = _import(admin, provider, "acct", good)
    assert created.status_code == 201
    again = _post_escaped(
        admin, f"/api/accounts/{created.json()['id']}/credentials", {"credentials": credentials}
    )
    assert again.status_code == 400, again.text
    assert again.json()["error"]["code"] == "invalid_credentials_file"


@pytest.mark.parametrize(
    ("provider", "credentials"),
    [
        ("claude", _with(CLAUDE_FILE, "claudeAiOauth", "subscriptionType", "\ud800")),
        ("codex", _with(CODEX_AUTH_JSON, "tokens", "account_id", "\ud800")),
        ("antigravity", _with(ANTIGRAVITY_FILE, "", "email", "\ud800")),
        ("antigravity", _with(ANTIGRAVITY_FILE, "", "project_id", "p\ud800")),
    ],
)
def test_ops_1_an_identity_field_no_column_can_hold_is_left_out_not_a_500(
    admin: httpx.Client, provider: str, credentials: dict[str, Any]
) -> None:
    body = {"provider": provider, "name": "acct", "credentials": credentials}
    created = _post_escaped(admin, "/api/accounts/import", body)
    assert created.status_code == 201, created.text
    assert "\\ud800" not in created.text
