"""OPS-1 (amendment, turn 4): inputs found by probing that answered 500 get a clear 4xx.

Numbers, codes, ids and cursors are ASCII digits only (any other digit → 400); an unparsable webhook
URL is ``invalid_url``; a taken name is 409 whatever else the change asks; integers beyond 64 bits
in model bodies are 400 in the client's own shape. On a real gateway over a real SQLite file.
"""

from __future__ import annotations

import httpx
import pyotp
import pytest

from sublane_gateway.testing import ADMIN_PASSWORD, ADMIN_USERNAME, Gateway

FOREIGN_CODES = ["١٢٣٤٥٦", "１２３４５６", "۱۲۳۴۵۶", "12345²"]


def _code(response: httpx.Response) -> str:
    error = response.json()["error"]
    return str(error["code"])


def _enable_totp(admin: httpx.Client) -> list[str]:
    """Turn TOTP on for the caller; its recovery codes."""
    secret = admin.post("/api/me/totp/setup").json()["secret"]
    enabled = admin.post("/api/me/totp/enable", json={"code": pyotp.TOTP(secret).now()})
    assert enabled.status_code == 200
    codes: list[str] = enabled.json()["recovery_codes"]
    return codes


@pytest.mark.parametrize("code", FOREIGN_CODES)
def test_ops_1_non_ascii_digits_in_totp_codes_are_400_on_enable(admin: httpx.Client, code: str) -> None:
    assert admin.post("/api/me/totp/setup").status_code == 200
    answer = admin.post("/api/me/totp/enable", json={"code": code})
    assert answer.status_code == 400 and _code(answer) == "invalid_request", answer.text


def test_ops_1_non_ascii_digits_in_totp_codes_are_400_on_sign_in_and_disable(
    gateway: Gateway, admin: httpx.Client
) -> None:
    recovery = _enable_totp(admin)
    for code in FOREIGN_CODES:
        signing_in = gateway.client().post(
            "/api/auth/login",
            json={"username": ADMIN_USERNAME, "password": ADMIN_PASSWORD, "totp_code": code},
        )
        assert signing_in.status_code == 400 and _code(signing_in) == "invalid_request", signing_in.text
        disabling = admin.post("/api/me/totp/disable", json={"code": code, "password": ADMIN_PASSWORD})
        assert disabling.status_code == 400 and _code(disabling) == "invalid_request", disabling.text
    disabled = admin.post("/api/me/totp/disable", json={"code": recovery[0], "password": ADMIN_PASSWORD})
    assert disabled.is_success  # a right code still works afterwards


@pytest.mark.parametrize("group_ids", ["١", "１", "²", "1,٢", "99999999999999999999999"])
def test_ops_1_non_ascii_digits_in_group_ids_of_a_bundle_import_are_400(
    gateway: Gateway, admin: httpx.Client, group_ids: str
) -> None:
    answer = admin.post(
        "/api/accounts/import-bundle",
        files={"file": ("accounts.bundle", b"not a bundle", "application/octet-stream")},
        data={"passphrase": "a passphrase of length", "group_ids": group_ids},
        headers={"origin": gateway.url},
    )
    assert answer.status_code == 400 and _code(answer) == "invalid_request", answer.text


@pytest.mark.parametrize("cursor", ["١٢", "１２", "²", "99999999999999999999999"])
def test_ops_1_non_ascii_digits_in_the_deliveries_cursor_are_400(admin: httpx.Client, cursor: str) -> None:
    created = admin.post("/api/webhooks", json={"url": "https://alerts.example.com/hook", "events": ["*"]})
    assert created.status_code == 201, created.text
    answer = admin.get(f"/api/webhooks/{created.json()['id']}/deliveries", params={"cursor": cursor})
    assert answer.status_code == 400 and _code(answer) == "invalid_request", answer.text


@pytest.mark.parametrize("url", ["http://[::1/", "http://[zz]/", "https://[::1"])
def test_ops_1_an_unparsable_webhook_url_is_400_invalid_url(admin: httpx.Client, url: str) -> None:
    answer = admin.post("/api/webhooks", json={"url": url, "events": ["*"]})
    assert answer.status_code == 400 and _code(answer) == "invalid_url", answer.text


@pytest.mark.parametrize("other", [{"enabled": False}, {"password": "another-pass-9"}, {"role": "admin"}])
def test_ops_1_a_taken_user_name_is_409_whatever_else_the_change_asks(
    gateway: Gateway, admin: httpx.Client, other: dict[str, object]
) -> None:
    bob = gateway.add_member(admin, "bob")
    gateway.add_member(admin, "carol")
    answer = admin.patch(f"/api/users/{bob['id']}", json={"username": "carol", **other})
    assert answer.status_code == 409 and _code(answer) == "name_taken", answer.text
    users = {user["username"]: user for user in admin.get("/api/users").json()["items"]}
    assert users["bob"]["enabled"] and users["bob"]["role"] == "member"  # nothing was written
    assert gateway.login("bob", "member-pass-1")  # nor the password, nor its sessions


BIG = 2**70
MODEL_BODIES = {
    "/v1/responses": ({"model": "gpt-5-codex", "input": "hi", "max_output_tokens": BIG}, "openai"),
    "/v1/chat/completions": (
        {"model": "gpt-5-codex", "max_tokens": BIG, "messages": [{"role": "user", "content": "hi"}]},
        "openai",
    ),
    "/v1/messages": (
        {"model": "claude-sonnet-4-6", "max_tokens": BIG, "messages": [{"role": "user", "content": "hi"}]},
        "anthropic",
    ),
    "/v1beta/models/gemini-3-flash:generateContent": (
        {"contents": [{"parts": [{"text": "hi"}]}], "generationConfig": {"seed": -BIG}},
        "gemini",
    ),
}


@pytest.mark.parametrize("path", sorted(MODEL_BODIES))
def test_ops_1_integers_beyond_64_bits_in_model_bodies_are_400(
    gateway: Gateway, admin: httpx.Client, path: str
) -> None:
    key = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    body, shape = MODEL_BODIES[path]
    client = gateway.client(headers={"authorization": f"Bearer {key}", "x-goog-api-key": key})
    answer = client.post(path, json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    if shape == "gemini":
        assert error["code"] == 400 and error["status"] == "INVALID_ARGUMENT", answer.text
    else:
        assert error["type"] == "invalid_request_error" and "64 bits" in error["message"], answer.text
        assert shape != "anthropic" or answer.json()["type"] == "error"
    fits = client.post(path, json={**body, "max_tokens": 2**63 - 1} if "max_tokens" in body else body)
    assert fits.status_code != 500


@pytest.mark.parametrize("written", ["1.0", "+1", "%201", "1%20", "1_0", "01e0", "١", "１", "0x1"])
def test_ops_1_an_id_in_a_path_is_ascii_digits_only(admin: httpx.Client, written: str) -> None:
    """Found by a bad-input sweep: "1.0", "+1" and " 1" were read as id 1 (a lax integer parse)."""
    answer = admin.patch(f"/api/users/{written}", json={"username": "renamed"})
    assert answer.status_code == 400, (written, answer.status_code, answer.text)
    assert _code(answer) == "invalid_request"
    assert {user["username"] for user in admin.get("/api/users").json()["items"]} == {ADMIN_USERNAME}
    assert admin.patch("/api/users/01", json={"username": ADMIN_USERNAME}).status_code == 200  # digits
