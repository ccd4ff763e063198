from __future__ import annotations

import httpx
import pytest
from sqlmodel import Session, select

from sublane_core import User
from sublane_gateway.testing import MEMBER_PASSWORD, Gateway


def test_admin_creates_lists_and_updates_users(gateway: Gateway, admin: httpx.Client) -> None:
    created = admin.post("/api/users", json={"username": "alice", "password": "alice-pass-1", "rpm": 60})
    assert created.status_code == 201
    alice = created.json()
    assert alice["role"] == "member"
    assert alice["member_concurrency"] == 10  # ADM-3 default from settings
    assert alice["rpm"] == 60
    assert alice["group_ids"] == [1]  # joined the default group
    assert "password" not in alice and "password_hash" not in alice
    names = [user["username"] for user in admin.get("/api/users").json()["items"]]
    assert names == ["admin", "alice"]
    updated = admin.patch(f"/api/users/{alice['id']}", json={"member_concurrency": 0, "role": "admin"})
    assert updated.status_code == 200
    assert updated.json()["member_concurrency"] == 0  # 0 = unlimited
    assert updated.json()["role"] == "admin"


def test_users_can_start_in_chosen_groups(admin: httpx.Client) -> None:
    team = admin.post("/api/groups", json={"name": "team"}).json()
    user = admin.post(
        "/api/users", json={"username": "carol", "password": "carol-pass-1", "group_ids": [team["id"]]}
    ).json()
    assert user["group_ids"] == [team["id"]]


def test_members_cannot_manage_users(gateway: Gateway, admin: httpx.Client) -> None:
    user, member = gateway.member(admin, "bob")
    assert member.get("/api/users").status_code == 403
    response = member.post("/api/users", json={"username": "eve", "password": "eve-pass-12"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    promote = member.patch(f"/api/users/{user['id']}", json={"role": "admin"})
    assert promote.status_code == 403
    assert member.get("/api/me").json()["user"]["role"] == "member"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"username": "admin", "password": "whatever-1"}, "name_taken"),
        ({"username": "bad name", "password": "whatever-1"}, "invalid_request"),
        ({"username": "", "password": "whatever-1"}, "invalid_request"),
        ({"username": "x", "password": "short"}, "invalid_request"),
        ({"username": "x", "password": "whatever-1", "role": "owner"}, "invalid_request"),
        ({"username": "x", "password": "whatever-1", "member_concurrency": 1001}, "invalid_request"),
        ({"username": "x", "password": "whatever-1", "member_concurrency": -1}, "invalid_request"),
        ({"username": "x", "password": "whatever-1", "rpm": -5}, "invalid_request"),
        ({"username": "x", "password": "whatever-1", "group_ids": [999]}, "invalid_request"),
        ({"username": "x", "password": "whatever-1", "is_superuser": True}, "invalid_request"),
        ({"username": "x"}, "invalid_request"),
    ],
)
def test_bad_user_input_gets_4xx_and_writes_nothing(
    gateway: Gateway, admin: httpx.Client, body: dict[str, object], code: str
) -> None:
    response = admin.post("/api/users", json=body)
    assert 400 <= response.status_code < 500
    assert response.json()["error"]["code"] == code
    with Session(gateway.engine) as db:
        assert [user.username for user in db.exec(select(User))] == ["admin"]


def test_renaming_to_a_taken_name_is_refused(gateway: Gateway, admin: httpx.Client) -> None:
    bob = gateway.add_member(admin, "bob")
    response = admin.patch(f"/api/users/{bob['id']}", json={"username": "admin"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "name_taken"


def test_unknown_user_is_404(admin: httpx.Client) -> None:
    response = admin.patch("/api/users/999", json={"rpm": 1})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("change", [{"role": "member"}, {"enabled": False}])
def test_the_last_enabled_admin_cannot_be_demoted_or_disabled(
    admin: httpx.Client, change: dict[str, object]
) -> None:
    response = admin.patch("/api/users/1", json=change)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "last_admin"
    assert admin.get("/api/me").json()["user"]["role"] == "admin"


def test_an_admin_can_step_down_when_another_admin_exists(gateway: Gateway, admin: httpx.Client) -> None:
    gateway.add_member(admin, "second", role="admin")
    assert admin.patch("/api/users/1", json={"role": "member"}).status_code == 200
    assert admin.get("/api/users").status_code == 403


def test_password_change_ends_sessions_and_the_new_password_works(
    gateway: Gateway, admin: httpx.Client
) -> None:
    user, member = gateway.member(admin, "bob")
    assert admin.patch(f"/api/users/{user['id']}", json={"password": "brand-new-pass"}).status_code == 200
    assert member.get("/api/me").status_code == 401
    gateway.login("bob", "brand-new-pass")
    old = gateway.client().post("/api/auth/login", json={"username": "bob", "password": MEMBER_PASSWORD})
    assert old.status_code == 401


def test_null_for_a_required_field_is_refused(admin: httpx.Client) -> None:
    response = admin.patch("/api/users/1", json={"username": None})
    assert response.status_code == 400
