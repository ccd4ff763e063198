from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sublane_gateway.testing import ADMIN_PASSWORD, MEMBER_PASSWORD, Gateway, make_settings, running_gateway


def test_login_sets_an_httponly_samesite_lax_cookie(gateway: Gateway) -> None:
    client = gateway.client()
    response = client.post("/api/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert response.status_code == 200
    assert response.json() == {"user": {"id": 1, "username": "admin", "role": "admin"}}
    cookie = response.headers["set-cookie"].lower()
    assert "sublane_session=" in cookie
    assert "httponly" in cookie
    assert "samesite=lax" in cookie
    me = client.get("/api/me").json()
    assert me["user"]["username"] == "admin"
    assert me["groups"] == [{"id": 1, "name": "default"}]
    assert "password_hash" not in me["user"]


@pytest.mark.parametrize(
    "body",
    [{"username": "admin", "password": "wrong-password"}, {"username": "nobody", "password": ADMIN_PASSWORD}],
)
def test_wrong_credentials_get_401_invalid_credentials(gateway: Gateway, body: dict[str, str]) -> None:
    response = gateway.client().post("/api/auth/login", json=body)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_credentials"
    assert "set-cookie" not in response.headers


def test_disabled_users_cannot_sign_in_and_lose_their_sessions(gateway: Gateway, admin: httpx.Client) -> None:
    user, member = gateway.member(admin, "bob")
    assert member.get("/api/me").status_code == 200
    assert admin.patch(f"/api/users/{user['id']}", json={"enabled": False}).status_code == 200
    assert member.get("/api/me").status_code == 401
    response = gateway.client().post("/api/auth/login", json={"username": "bob", "password": MEMBER_PASSWORD})
    assert response.json()["error"]["code"] == "invalid_credentials"


def test_logout_ends_the_session(admin: httpx.Client) -> None:
    cookie = admin.cookies.get("sublane_session")
    assert admin.post("/api/auth/logout").status_code == 204
    assert admin.get("/api/me").status_code == 401
    # Replaying the old cookie does not bring the session back.
    admin.cookies.set("sublane_session", cookie or "")
    assert admin.get("/api/me").json()["error"]["code"] == "unauthenticated"


def test_sessions_expire(gateway: Gateway, admin: httpx.Client) -> None:
    gateway.clock.advance(gateway.settings.session_ttl_s + 1)
    response = admin.get("/api/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize("cookie", [None, "forged-session-token"])
def test_management_routes_need_a_session(gateway: Gateway, cookie: str | None) -> None:
    client = gateway.client()
    if cookie:
        client.cookies.set("sublane_session", cookie)
    for path in ("/api/me", "/api/users", "/api/groups", "/api/keys", "/api/me/keys", "/api/accounts"):
        response = client.get(path)
        assert response.status_code == 401, path
        assert response.json()["error"]["code"] == "unauthenticated"


def test_first_start_without_admin_variables_offers_a_one_time_setup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path / "data", admin_username=None, admin_password=None)
    with running_gateway(settings) as gateway:
        printed = capsys.readouterr().out
        assert "/setup#token=" in printed
        token = printed.split("/setup#token=")[1].split()[0]
        client = gateway.client()
        page = client.get("/setup")
        assert page.status_code == 200 and "Create the first admin" in page.text
        wrong = client.post(
            "/api/auth/setup", json={"token": "nope", "username": "root", "password": "rootpass1"}
        )
        assert wrong.status_code == 409
        assert wrong.json()["error"]["code"] == "setup_not_available"
        done = client.post(
            "/api/auth/setup", json={"token": token, "username": "root", "password": "rootpass1"}
        )
        assert done.status_code == 201
        assert done.json()["user"]["role"] == "admin"
        assert client.get("/api/users").status_code == 200  # signed in as the new admin
        again = gateway.client().post(
            "/api/auth/setup", json={"token": token, "username": "root2", "password": "rootpass1"}
        )
        assert again.status_code == 409


def test_bootstrap_admin_is_created_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    with running_gateway(settings) as gateway:
        gateway.admin()
    changed = make_settings(tmp_path / "data", admin_password="another-password")
    with running_gateway(changed) as gateway:
        gateway.admin()  # the stored password still works: variables apply to an empty database only
        response = gateway.client().post(
            "/api/auth/login", json={"username": "admin", "password": "another-password"}
        )
        assert response.status_code == 401
