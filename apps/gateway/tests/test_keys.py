from __future__ import annotations

import hashlib
import re

import httpx
import pytest
from sqlmodel import Session, select

from sublane_core import ApiKey, ShiftedClock
from sublane_gateway.pipeline import KeyAuthenticator, Principal
from sublane_gateway.testing import Gateway


def test_a_member_creates_a_key_whose_secret_is_shown_once_and_stored_hashed(
    gateway: Gateway, admin: httpx.Client
) -> None:
    _, member = gateway.member(admin, "bob")
    created = member.post("/api/me/keys", json={"name": "laptop", "group_id": 1})
    assert created.status_code == 201
    key = created.json()
    secret = key["secret"]
    assert re.fullmatch(r"sl_[A-Za-z0-9_-]{43}", secret)  # sl_ + 32 bytes, unpadded base64url
    assert key["group_id"] == 1 and key["name"] == "laptop" and key["state"] == "active"
    listed = member.get("/api/me/keys").json()["items"]
    assert [item["id"] for item in listed] == [key["id"]]
    assert "secret" not in listed[0] and secret not in member.get("/api/me/keys").text
    assert secret not in admin.get("/api/keys").text
    with Session(gateway.engine) as db:
        stored = db.exec(select(ApiKey)).one()
    assert stored.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in repr(stored.model_dump())


def test_revocation_is_immediate_and_only_for_the_owner(gateway: Gateway, admin: httpx.Client) -> None:
    _, bob = gateway.member(admin, "bob")
    _, eve = gateway.member(admin, "eve")
    key = bob.post("/api/me/keys", json={"name": "k", "group_id": 1}).json()
    stolen = eve.delete(f"/api/me/keys/{key['id']}")
    assert stolen.status_code == 404  # another member's key does not exist for you
    assert eve.patch(f"/api/me/keys/{key['id']}", json={"enabled": False}).status_code == 404
    assert bob.get("/api/me/keys").json()["items"][0]["state"] == "active"
    revoked = bob.delete(f"/api/me/keys/{key['id']}")
    assert revoked.status_code == 200
    assert revoked.json()["state"] == "revoked"
    assert bob.get("/api/me/keys").json()["items"][0]["revoked_at"] is not None
    assert bob.patch(f"/api/me/keys/{key['id']}", json={"enabled": True}).status_code == 400


def test_keys_can_be_paused_and_resumed(gateway: Gateway, admin: httpx.Client) -> None:
    _, bob = gateway.member(admin, "bob")
    key = bob.post("/api/me/keys", json={"name": "k", "group_id": 1}).json()
    assert bob.patch(f"/api/me/keys/{key['id']}", json={"enabled": False}).json()["state"] == "paused"
    assert admin.patch(f"/api/keys/{key['id']}", json={"enabled": True}).json()["state"] == "active"


def test_keys_expire(gateway: Gateway, admin: httpx.Client) -> None:
    _, bob = gateway.member(admin, "bob")
    expires_at = gateway.clock.time() + 60
    key = bob.post("/api/me/keys", json={"name": "k", "group_id": 1, "expires_at": expires_at}).json()
    assert key["expires_at"] == expires_at and key["state"] == "active"
    gateway.clock.advance(61)
    gateway.login("bob", "member-pass-1")  # session still valid; look again
    assert bob.get("/api/me/keys").json()["items"][0]["state"] == "expired"


def test_admin_issues_keys_for_members_and_sees_all_keys(gateway: Gateway, admin: httpx.Client) -> None:
    bob, member = gateway.member(admin, "bob")
    issued = admin.post(f"/api/users/{bob['id']}/keys", json={"name": "ci", "group_id": 1})
    assert issued.status_code == 201
    assert issued.json()["user_id"] == bob["id"] and issued.json()["secret"].startswith("sl_")
    assert [item["name"] for item in member.get("/api/me/keys").json()["items"]] == ["ci"]
    everything = admin.get("/api/keys").json()["items"]
    assert [(item["username"], item["name"]) for item in everything] == [("bob", "ci")]
    assert admin.delete(f"/api/keys/{issued.json()['id']}").json()["state"] == "revoked"
    assert member.get("/api/keys").status_code == 403
    assert member.post(f"/api/users/{bob['id']}/keys", json={"name": "x", "group_id": 1}).status_code == 403


def test_keys_only_for_groups_the_owner_belongs_to(gateway: Gateway, admin: httpx.Client) -> None:
    team = admin.post("/api/groups", json={"name": "team"}).json()
    bob, member = gateway.member(admin, "bob")
    refused = member.post("/api/me/keys", json={"name": "k", "group_id": team["id"]})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "not_group_member"
    assert (
        admin.post(f"/api/users/{bob['id']}/keys", json={"name": "k", "group_id": team["id"]}).status_code
        == 400
    )
    assert member.post("/api/me/keys", json={"name": "k", "group_id": 404}).status_code == 404
    assert member.get("/api/me/keys").json()["items"] == []


def test_at_most_20_live_keys_per_user(gateway: Gateway, admin: httpx.Client) -> None:
    _, member = gateway.member(admin, "bob")
    ids = [member.post("/api/me/keys", json={"name": f"k{i}", "group_id": 1}).json()["id"] for i in range(20)]
    over = member.post("/api/me/keys", json={"name": "k21", "group_id": 1})
    assert over.status_code == 409
    assert over.json()["error"]["code"] == "key_limit_reached"
    member.delete(f"/api/me/keys/{ids[0]}")
    assert member.post("/api/me/keys", json={"name": "k21", "group_id": 1}).status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        {"name": "", "group_id": 1},
        {"name": "k"},
        {"name": "k", "group_id": "one"},
        {"name": "k", "group_id": 1, "expires_at": 1},  # in the past
        {"name": "k", "group_id": 1, "secret": "sl_mine"},
    ],
)
def test_bad_key_input(gateway: Gateway, admin: httpx.Client, body: dict[str, object]) -> None:
    _, member = gateway.member(admin, "bob")
    response = member.post("/api/me/keys", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert member.get("/api/me/keys").json()["items"] == []


async def test_a_key_looked_up_while_access_changes_is_checked_again_after_a_wait(gateway: Gateway) -> None:
    """WAIT-5: a key whose first lookup raced an access change (so its principal was not cached) is
    still found by ``authenticate_again``: the race once turned a wait into a spurious 401."""
    answer = gateway.admin().post("/api/users/1/keys", json={"name": "racing", "group_id": 1})
    secret = answer.json()["secret"]
    keys = KeyAuthenticator(gateway.engine, ShiftedClock())
    load = keys._load

    def racing_load(digest: str) -> Principal | None:
        keys.invalidate()  # an access change (another key created or revoked) lands during the lookup
        return load(digest)

    keys._load = racing_load  # type: ignore[method-assign]
    principal = await keys.authenticate({"authorization": f"Bearer {secret}"})
    assert await keys.authenticate_again(principal) == principal
