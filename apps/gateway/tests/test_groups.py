from __future__ import annotations

import httpx
import pytest

from sublane_gateway.testing import Gateway

CODEX_FILE = {
    "tokens": {"access_token": "at-group-test", "refresh_token": "rt-group-test", "account_id": "acct-1"}
}


def _import(admin: httpx.Client, name: str) -> int:
    response = admin.post(
        "/api/accounts/import", json={"provider": "codex", "name": name, "credentials": CODEX_FILE}
    )
    assert response.status_code == 201, response.text
    account_id: int = response.json()["id"]
    return account_id


def test_default_group_exists_from_first_start(admin: httpx.Client) -> None:
    groups = admin.get("/api/groups").json()["items"]
    assert [(group["id"], group["name"], group["model_policy"]) for group in groups] == [(1, "default", None)]
    assert groups[0]["user_ids"] == [1]


def test_groups_with_model_policy_members_and_accounts(gateway: Gateway, admin: httpx.Client) -> None:
    created = admin.post(
        "/api/groups",
        json={"name": "team", "model_policy": {"allow": ["gpt-5-codex", "gpt-5-codex", "claude-opus-4-8"]}},
    )
    assert created.status_code == 201
    team = created.json()
    assert team["model_policy"] == {"allow": ["gpt-5-codex", "claude-opus-4-8"]}
    bob = gateway.add_member(admin, "bob")
    account_id = _import(admin, "codex-1")
    members = admin.put(f"/api/groups/{team['id']}/members", json={"user_ids": [bob["id"], 1, bob["id"]]})
    assert members.status_code == 200
    assert members.json()["user_ids"] == [1, bob["id"]]
    accounts = admin.put(f"/api/groups/{team['id']}/accounts", json={"account_ids": [account_id]})
    assert accounts.json()["account_ids"] == [account_id]
    assert admin.get(f"/api/accounts/{account_id}").json()["group_ids"] == [team["id"]]
    cleared = admin.patch(f"/api/groups/{team['id']}", json={"model_policy": None})
    assert cleared.json()["model_policy"] is None
    renamed = admin.patch(f"/api/groups/{team['id']}", json={"name": "platform"})
    assert renamed.json()["name"] == "platform"
    assert renamed.json()["user_ids"] == [1, bob["id"]]  # a rename keeps members
    emptied = admin.put(f"/api/groups/{team['id']}/members", json={"user_ids": []})
    assert emptied.json()["user_ids"] == []


def test_unknown_ids_leave_the_group_unchanged(gateway: Gateway, admin: httpx.Client) -> None:
    bob = gateway.add_member(admin, "bob")
    response = admin.put("/api/groups/1/members", json={"user_ids": [bob["id"], 999]})
    assert response.status_code == 400
    assert "999" in response.json()["error"]["message"]
    assert admin.get("/api/groups").json()["items"][0]["user_ids"] == [1, bob["id"]]
    assert admin.put("/api/groups/1/accounts", json={"account_ids": [12345]}).status_code == 400


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "default"}, 409, "name_taken"),
        ({"name": ""}, 400, "invalid_request"),
        ({"name": "x" * 65}, 400, "invalid_request"),
        ({"name": "x", "model_policy": {"deny": ["a"]}}, 400, "invalid_request"),
        ({"name": "x", "model_policy": {"allow": "gpt-5"}}, 400, "invalid_request"),
        ({"name": "x", "model_policy": {"allow": [""]}}, 400, "invalid_request"),
        ({"name": "x", "color": "red"}, 400, "invalid_request"),
    ],
)
def test_bad_group_input(admin: httpx.Client, body: dict[str, object], status: int, code: str) -> None:
    response = admin.post("/api/groups", json=body)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert len(admin.get("/api/groups").json()["items"]) == 1


def test_the_default_group_keeps_its_name(admin: httpx.Client) -> None:
    response = admin.patch("/api/groups/1", json={"name": "renamed"})
    assert response.status_code == 400
    assert admin.get("/api/groups").json()["items"][0]["name"] == "default"


def test_members_cannot_manage_groups(gateway: Gateway, admin: httpx.Client) -> None:
    _, member = gateway.member(admin, "bob")
    assert member.get("/api/groups").status_code == 403
    assert member.post("/api/groups", json={"name": "mine"}).status_code == 403
    assert member.put("/api/groups/1/members", json={"user_ids": []}).status_code == 403
    assert member.patch("/api/groups/1", json={"model_policy": None}).status_code == 403


def test_unknown_group_is_404(admin: httpx.Client) -> None:
    assert admin.patch("/api/groups/77", json={"name": "x"}).status_code == 404
    assert admin.put("/api/groups/77/members", json={"user_ids": []}).status_code == 404
