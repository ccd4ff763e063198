"""The audit log (OPS-10) through the whole gateway: every mutation kind, no reads, no secrets.

Mutations are made through the management API as an admin (and a member for their own keys),
accounts come from the upstream simulator, one of them by a real OAuth login; the log is read back
through ``GET /api/audit`` as the web view reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from gateway_pool import Pool

from sublane_gateway.testing import ADMIN_PASSWORD, ADMIN_USERNAME, MEMBER_PASSWORD

SUBLANE = str(Path(sys.executable).parent / "sublane")
NEW_PASSWORD = "a-brand-new-password-42"
DAY = 86_400.0


def entries(pool: Pool, client: httpx.Client | None = None, **params: str) -> list[dict[str, Any]]:
    answer = (client or pool.admin).get("/api/audit", params=params)
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def oauth_login(pool: Pool, name: str) -> dict[str, Any]:
    upstream = pool.sim.create_account("codex")
    pool.sim.prepare_login("codex", upstream.id)
    started = ok(pool.admin.post("/api/accounts/oauth/start", json={"provider": "codex", "name": name}))
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        location = browser.get(started["authorize_url"]).headers["location"]
    body = {"state": started["state"], "callback_url": location}
    created: dict[str, Any] = ok(pool.admin.post("/api/accounts/oauth/complete", json=body), 201)
    return created


def test_ops_10_every_mutation_kind_is_audited_with_who_what_and_which(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    admin = pool.admin
    admin_id = ok(admin.get("/api/me"))["user"]["id"]
    account_id = pool.account_ids[0]
    before = {entry["id"] for entry in entries(pool)}

    bob = ok(admin.post("/api/users", json={"username": "bob", "password": MEMBER_PASSWORD}), 201)
    ok(admin.patch(f"/api/users/{bob['id']}", json={"rpm": 30, "password": NEW_PASSWORD}))
    group = ok(
        admin.post("/api/groups", json={"name": "team", "model_policy": {"allow": ["gpt-5-codex"]}}), 201
    )
    ok(admin.patch(f"/api/groups/{group['id']}", json={"name": "team-a"}))
    ok(admin.put(f"/api/groups/{group['id']}/members", json={"user_ids": [bob["id"]]}))
    ok(admin.put(f"/api/groups/{group['id']}/accounts", json={"account_ids": [account_id]}))
    issued = ok(admin.post(f"/api/users/{bob['id']}/keys", json={"name": "issued", "group_id": 1}), 201)
    ok(admin.patch(f"/api/keys/{issued['id']}", json={"enabled": False}))
    ok(admin.delete(f"/api/keys/{issued['id']}"))
    ok(admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 7}))
    ok(admin.post(f"/api/accounts/{account_id}/resume"))
    ok(admin.patch(f"/api/accounts/{account_id}", json={"name": "renamed", "enabled": False}))
    fresh = pool.sim.credentials(pool.sim_accounts[0].id)
    ok(admin.post(f"/api/accounts/{account_id}/credentials", json={"credentials": fresh}))
    other = pool.sim.create_account("codex")
    imported = ok(
        admin.post(
            "/api/accounts/import",
            json={
                "provider": "codex",
                "name": "imported",
                "credentials": other.credentials,
                "group_ids": [1],
            },
        ),
        201,
    )
    signed_in = oauth_login(pool, "signed-in")
    assert admin.delete(f"/api/accounts/{imported['id']}").status_code == 204
    member = pool.gateway.login("bob", NEW_PASSWORD)
    own = ok(member.post("/api/me/keys", json={"name": "laptop", "group_id": 1}), 201)
    ok(member.delete(f"/api/me/keys/{own['id']}"))

    log = [entry for entry in reversed(entries(pool)) if entry["id"] not in before]  # oldest first
    actions = [entry["action"] for entry in log]
    assert actions == [
        "user.create", "user.update", "group.create", "group.update", "group.members", "group.accounts",
        "key.create", "key.update", "key.revoke", "account.limits", "account.resume", "account.update",
        "account.reauthorize", "account.import", "account.oauth_start", "account.oauth_login",
        "account.delete", "key.create", "key.revoke",
    ]  # fmt: skip
    by_action = {entry["action"]: entry for entry in log}
    for entry in log[:-2]:
        assert entry["actor_id"] == admin_id and entry["actor_name"] == ADMIN_USERNAME
        assert entry["object_type"] == entry["action"].split(".")[0]
    assert [(entry["actor_name"], entry["object_id"]) for entry in log[-2:]] == [("bob", own["id"])] * 2
    assert by_action["user.create"]["object_id"] == bob["id"]
    assert by_action["user.update"]["summary"] == {"rpm": {"from": 0, "to": 30}, "password_changed": True}
    assert by_action["group.update"]["summary"] == {"name": {"from": "team", "to": "team-a"}}
    assert by_action["group.members"]["summary"] == {"added": [bob["id"]], "removed": [], "count": 1}
    assert by_action["account.limits"]["summary"] == {"max_concurrency": {"from": 30, "to": 7}}
    assert by_action["account.update"]["summary"] == {
        "name": {"from": "codex-1", "to": "renamed"},
        "enabled": {"from": True, "to": False},
    }
    assert by_action["key.update"]["summary"]["enabled"] == {"from": True, "to": False}
    assert by_action["account.oauth_login"]["object_id"] == signed_in["id"]
    assert by_action["account.delete"]["object_id"] == imported["id"]
    # Never a secret, a credential or a body: no password, key secret, token or credential file.
    text = json.dumps(log)
    for secret in (MEMBER_PASSWORD, NEW_PASSWORD, issued["secret"], own["secret"], issued["hint"]):
        assert secret not in text
    for credentials in (fresh, other.credentials):
        for token in _strings(credentials):
            assert token not in text


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [item for nested in value.values() for item in _strings(nested)]
    return [value] if isinstance(value, str) and len(value) >= 12 else []


def test_ops_10_reads_and_refused_mutations_leave_no_entry(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    admin = pool.admin
    bob = ok(admin.post("/api/users", json={"username": "bob", "password": MEMBER_PASSWORD}), 201)
    count = len(entries(pool))
    pool.client().post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi", "stream": True})
    for path in (
        "/api/me", "/api/users", "/api/groups", "/api/keys", "/api/me/keys", "/api/accounts",
        "/api/accounts/runtime", f"/api/accounts/{pool.account_ids[0]}", "/api/requests",
        "/api/requests/filters", "/api/me/requests", "/api/audit", "/api/audit/filters", "/metrics",
        "/healthz", "/readyz",
    ):  # fmt: skip
        assert admin.get(path).status_code == 200, path
    # Refused: a taken name, an unknown group, a bad limit, the last admin, a member's admin call.
    assert admin.patch(f"/api/users/{bob['id']}", json={"username": ADMIN_USERNAME}).status_code == 409
    assert admin.put("/api/groups/1/members", json={"user_ids": [999]}).status_code == 400
    assert (
        admin.patch(f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": 0}).status_code
        == 400
    )
    assert admin.patch("/api/users/1", json={"role": "member"}).status_code == 409
    member = pool.gateway.login("bob", MEMBER_PASSWORD)
    assert member.post("/api/groups", json={"name": "sneaky"}).status_code == 403
    assert admin.post("/api/auth/logout").status_code == 204  # sign-in and sign-out are not changes
    pool.gateway.login(ADMIN_USERNAME, ADMIN_PASSWORD)
    assert len(entries(pool, pool.gateway.admin())) == count


def test_ops_10_members_and_strangers_cannot_read_the_audit_log(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    _bob, member = pool.gateway.member(pool.admin, "bob")
    for path in ("/api/audit", "/api/audit/filters"):
        assert member.get(path).status_code == 403
        assert member.get(path).json()["error"]["code"] == "forbidden"
        assert pool.gateway.client().get(path).status_code == 401
        assert pool.client().get(path).status_code == 401  # an API key is no session


def test_ops_10_pages_of_50_with_a_cursor_and_filters_by_actor_and_action(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    account_id = pool.account_ids[0]
    for limit in range(1, 61):
        ok(pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": limit}))
    carol, other_admin = pool.gateway.member(pool.admin, "carol", role="admin")
    ok(other_admin.post(f"/api/accounts/{account_id}/resume"))
    first = ok(pool.admin.get("/api/audit", params={"action": "account.limits"}))
    assert len(first["items"]) == 50 and first["next_cursor"]
    assert first["items"][0]["summary"]["max_concurrency"]["to"] == 60  # newest first
    second = ok(
        pool.admin.get("/api/audit", params={"action": "account.limits", "cursor": first["next_cursor"]})
    )
    assert len(second["items"]) == 10 and second["next_cursor"] is None
    ids = [entry["id"] for entry in first["items"] + second["items"]]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 60
    by_carol = entries(pool, actor_id=str(carol["id"]))
    assert [entry["action"] for entry in by_carol] == ["account.resume"]
    filters = ok(pool.admin.get("/api/audit/filters"))
    assert {"id": carol["id"], "name": "carol"} in filters["actors"]
    assert {"account.limits", "account.resume", "user.create", "key.create"} <= set(filters["actions"])
    for bad in ({"action": "DROP TABLE"}, {"actor_id": "-1"}, {"cursor": "x"}, {"actor_id": "9" * 30}):
        answer = pool.admin.get("/api/audit", params=bad)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_request", bad


def test_ops_10_entries_are_kept_90_days(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(session_ttl_s=int(365 * DAY))  # the admin stays signed in across the jump
    account_id = pool.account_ids[0]
    ok(pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 5}))
    pool.gateway.clock.advance(89 * DAY)
    assert any(entry["action"] == "account.limits" for entry in entries(pool))
    ok(pool.admin.patch(f"/api/accounts/{account_id}/limits", json={"max_concurrency": 6}))
    pool.gateway.clock.advance(2 * DAY)  # the first change is now 91 days old, the second 2
    kept = entries(pool)
    assert [
        entry["summary"]["max_concurrency"]["to"] for entry in kept if entry["action"] == "account.limits"
    ] == [6]


def test_ops_10_a_password_reset_from_the_shell_is_audited(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool()
    data_dir = pool.gateway.settings.data_dir
    env = {key: value for key, value in os.environ.items() if not key.startswith("SUBLANE_")}
    env["SUBLANE_DATA_DIR"] = str(data_dir)
    reset = subprocess.run(
        [SUBLANE, "admin", "reset-password", ADMIN_USERNAME],
        env=env,
        cwd=tmp_path,
        input="shell-chosen-password\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert reset.returncode == 0, reset.stderr
    admin = pool.gateway.login(ADMIN_USERNAME, "shell-chosen-password")
    newest = entries(pool, admin)[0]
    assert newest["action"] == "user.password_reset" and newest["actor_id"] is None
    assert newest["actor_name"] == "(shell)" and newest["object_id"] == 1
    assert "shell-chosen-password" not in json.dumps(newest)
