"""POOL-1: ``GET /api/me/pool`` — the room in a member's pools, with nothing about any account."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from gateway_pool import Pool


def _pool_of(client: object) -> list[dict[str, object]]:
    response = client.get("/api/me/pool")  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    items: list[dict[str, object]] = response.json()["items"]
    return items


def test_pool_1_a_member_sees_usable_accounts_windows_and_share_without_account_details(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(accounts=3)
    user, key = pool.member_key("ada")
    member = pool.gateway.login("ada", "member-pass-1")
    with pool.client(key) as client:
        for text in ("one", "two"):
            answer = client.post("/v1/responses", json={"model": "gpt-5-codex", "input": text})
            assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 10  # the records (with their tokens) are written every 100 ms
    while len(member.get("/api/me/requests").json()["items"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    disabled = pool.admin.patch(f"/api/accounts/{pool.account_ids[2]}", json={"enabled": False})
    assert disabled.status_code == 200, disabled.text
    items = _pool_of(member)
    assert len(items) == 1
    item = items[0]
    assert (item["group_id"], item["group_name"], item["provider"]) == (1, "default", "codex")
    assert (item["accounts_usable"], item["accounts_total"]) == (2, 3)
    windows = item["windows"]
    assert isinstance(windows, list) and windows, item  # the answers' quota headers were observed
    assert all(
        set(window) == {"window", "mean_used_percent", "accounts_exhausted", "soonest_reset_at"}
        for window in windows
    )
    assert item["my_share_percent"] == 100.0  # only ada used the group in the last five hours
    text = json.dumps(items)
    for account in pool.sim_accounts:
        assert account.email not in text
    for name in ("codex-1", "codex-2", "codex-3", "account_id", "email"):
        assert name not in text
    assert user["id"]


def test_pool_1_only_groups_of_live_keys_are_listed(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool(accounts=1)
    user, key = pool.member_key("bob")
    member = pool.gateway.login("bob", "member-pass-1")
    assert [item["group_id"] for item in _pool_of(member)] == [1]
    keys = member.get("/api/me/keys").json()["items"]
    for entry in keys:
        assert member.delete(f"/api/me/keys/{entry['id']}").status_code in (200, 204)
    assert _pool_of(member) == []  # no live key: no pool to see
    assert key and user


def _share_becomes(member: object, expected: float, timeout_s: float = 10.0) -> None:
    """Waits until ``my_share_percent`` is ``expected`` (usage is written every 100 ms)."""
    deadline = time.monotonic() + timeout_s
    while True:
        share = _pool_of(member)[0]["my_share_percent"]
        if share == expected:
            return
        assert time.monotonic() < deadline, f"my_share_percent stayed {share}, not {expected}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "settings",
    [{"history_enabled": False}, {"history_max_records": 2}],
    ids=["history_off", "fewer_records_than_calls"],
)
def test_pool_1_the_share_comes_from_usage_summaries_whatever_history_keeps(
    make_pool: Callable[..., Pool], settings: dict[str, object]
) -> None:
    pool = make_pool(accounts=2, **settings)
    _user, key = pool.member_key("ada")
    member = pool.gateway.login("ada", "member-pass-1")
    body = {"model": "gpt-5-codex", "input": "the same words each time"}
    with pool.client(key) as client:
        assert client.post("/v1/responses", json=body).status_code == 200
    with pool.client() as admin:  # the admin's key, after ada: the records history keeps are theirs
        for _ in range(3):
            assert admin.post("/v1/responses", json=body).status_code == 200
    _share_becomes(member, 25.0)  # one call of four, each of the same tokens
