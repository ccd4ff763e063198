"""AUTH-3: keys limited to client addresses — calls from two loopback addresses and through a trusted
proxy; refused calls answer 403 ``ip_not_allowed`` in the client protocol's shape and leave no record."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
import websockets
from gateway_pool import Pool
from websockets.exceptions import InvalidStatus

from sublane_gateway.testing import MEMBER_PASSWORD

RESPONSES = {"model": "gpt-5-codex", "input": "hi"}
MESSAGES = {"model": "gpt-5-codex", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def _from(pool: Pool, address: str, secret: str, **headers: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (127.0.0.2 is loopback too)."""
    transport = httpx.HTTPTransport(local_address=address)
    client = httpx.Client(
        base_url=pool.gateway.url,
        transport=transport,
        timeout=10,
        headers={"authorization": f"Bearer {secret}", **headers},
    )
    return client


def _member_key(pool: Pool, allowed: list[str]) -> tuple[httpx.Client, dict[str, object], str]:
    pool.gateway.add_member(pool.admin, "ivy")
    pool.admin.put("/api/groups/1/members", json={"user_ids": [1, 2]})
    member = pool.gateway.login("ivy", MEMBER_PASSWORD)
    created = member.post("/api/me/keys", json={"name": "office", "group_id": 1, "allowed_ips": allowed})
    assert created.status_code == 201, created.text
    body = created.json()
    return member, body, str(body["secret"])


def _records(member: httpx.Client) -> int:
    time.sleep(0.3)  # the history writer's batch
    return len(member.get("/api/me/requests").json()["items"])


def test_auth_3_a_key_works_only_from_its_networks_and_refusals_leave_no_record(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    member, key, secret = _member_key(pool, ["127.0.0.2"])
    assert key["allowed_ips"] == ["127.0.0.2/32"]  # written canonically
    with _from(pool, "127.0.0.2", secret) as inside, _from(pool, "127.0.0.1", secret) as outside:
        assert inside.post("/v1/responses", json=RESPONSES).status_code == 200
        refused = outside.post("/v1/responses", json=RESPONSES)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "ip_not_allowed"
        anthropic = outside.post("/v1/messages", json=MESSAGES, headers={"anthropic-version": "2023-06-01"})
        assert anthropic.status_code == 403
        assert anthropic.json()["type"] == "error" and "address" in anthropic.json()["error"]["message"]
        gemini = outside.post("/v1beta/models/gpt-5-codex:generateContent", json={"contents": []})
        assert gemini.status_code == 403 and gemini.json()["error"]["status"] == "PERMISSION_DENIED"
        assert outside.get("/v1/models").status_code == 403
    assert _records(member) == 1  # only the call from inside
    # [] opens the key to any address again
    opened = member.patch(f"/api/me/keys/{key['id']}", json={"allowed_ips": []})
    assert opened.status_code == 200 and opened.json()["allowed_ips"] == []
    with _from(pool, "127.0.0.1", secret) as anywhere:
        assert anywhere.post("/v1/responses", json=RESPONSES).status_code == 200


def test_auth_3_behind_a_trusted_proxy_the_forwarded_client_address_counts(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(trusted_proxies=["127.0.0.1"])
    _member, _key, secret = _member_key(pool, ["10.0.0.0/8", "2001:db8::/32"])
    with _from(pool, "127.0.0.1", secret, **{"x-forwarded-for": "10.1.2.3"}) as office:
        assert office.post("/v1/responses", json=RESPONSES).status_code == 200
    with _from(pool, "127.0.0.1", secret, **{"x-forwarded-for": "192.168.1.9"}) as elsewhere:
        assert elsewhere.post("/v1/responses", json=RESPONSES).status_code == 403
    # From a peer that is not a trusted proxy, X-Forwarded-For is not believed: the peer counts.
    with _from(pool, "127.0.0.2", secret, **{"x-forwarded-for": "10.1.2.3"}) as spoofed:
        assert spoofed.post("/v1/responses", json=RESPONSES).status_code == 403


@pytest.mark.parametrize(
    "allowed",
    [["not-an-address"], ["10.0.0.0/33"], [f"10.0.0.{n}" for n in range(33)]],
    ids=["text", "prefix", "33"],
)
def test_auth_3_unreadable_or_too_many_networks_are_refused(
    make_pool: Callable[..., Pool], allowed: list[str]
) -> None:
    pool = make_pool()
    response = pool.admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1, "allowed_ips": allowed})
    assert 400 <= response.status_code < 500, response.text


async def test_auth_3_a_websocket_from_outside_the_keys_networks_is_refused_before_the_upgrade(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    _member, _key, secret = _member_key(pool, ["127.0.0.2"])
    url = pool.gateway.url.replace("http://", "ws://") + "/v1/responses"
    headers = {"authorization": f"Bearer {secret}"}
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(url, additional_headers=headers):
            pass
    assert refused.value.response.status_code == 403
    assert b"ip_not_allowed" in refused.value.response.body
