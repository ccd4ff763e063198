"""OPS-1 and OPS-2 on the management API: bad input and a busy database never give a 500.

Each test reproduces a probe that once answered 500 (issue #16).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from sublane_gateway.testing import Gateway, make_settings, running_gateway

HUGE_ID = "99999999999999999999"  # beyond 64 bits


def _code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def _path_routes(client: httpx.Client) -> list[tuple[str, str]]:
    paths: dict[str, dict[str, Any]] = client.get("/openapi.json").json()["paths"]
    return [
        (method.upper(), path)
        for path, operations in paths.items()
        if path.startswith("/api/") and re.search(r"\{\w+_id\}", path)
        for method in operations
    ]


def test_ops_1_path_ids_beyond_64_bits_are_400_on_every_route(admin: httpx.Client) -> None:
    # Found by probing: DELETE /api/me/keys/99999999999999999999 (and 12 more routes) gave a 500.
    routes = _path_routes(admin)
    assert len(routes) >= 13
    for method, path in routes:
        url = re.sub(r"\{\w+_id\}", HUGE_ID, path)
        response = admin.request(method, url, json={} if method in ("POST", "PUT", "PATCH") else None)
        assert response.status_code in (400, 404), (method, path, response.status_code, response.text)
        assert _code(response) in ("invalid_request", "not_found"), (method, path)


def test_ops_1_chunked_bodies_are_bounded_without_content_length(gateway: Gateway) -> None:
    # Found by probing: only Content-Length was checked, so a chunked sign-in body had no limit.
    def chunks() -> Iterator[bytes]:
        yield b'{"username": "admin", "password": "'
        for _ in range(40):
            yield b"x" * 65_536
        yield b'"}'

    client = gateway.client()
    response = client.post("/api/auth/login", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and _code(response) == "body_too_large"
    small = client.post(
        "/api/auth/login",
        content=iter([b'{"username": "admin", ', b'"password": "admin-pass-1"}']),
        headers={"Content-Type": "application/json"},
    )
    assert small.status_code == 200  # a small chunked body still gets through whole


def test_ops_1_an_unparsable_callback_address_is_400(admin: httpx.Client) -> None:
    # Found by probing: oauth/complete with "http://[/?code=…" gave a 500.
    started = admin.post("/api/accounts/oauth/start", json={"provider": "codex"}).json()
    response = admin.post(
        "/api/accounts/oauth/complete",
        json={"state": started["state"], "callback_url": f"http://[/?code=abc&state={started['state']}"},
    )
    assert response.status_code == 400 and _code(response) == "oauth_callback_invalid"


def test_ops_1_a_400_digit_timestamp_in_an_imported_credential_is_no_500(admin: httpx.Client) -> None:
    credentials = {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": 10**400}}
    response = admin.post(
        "/api/accounts/import",
        content=f'{{"provider": "claude", "name": "huge", "credentials": {_json(credentials)}}}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


@pytest.fixture
def quick_lock_gateway(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    # A short busy timeout, so the held lock outlasts it without making the test slow.
    monkeypatch.setattr("sublane_core._db.SQLITE_BUSY_TIMEOUT_MS", 200)
    with running_gateway(make_settings(data_dir)) as running:
        yield running


def test_ops_2_a_locked_database_answers_503_storage_unavailable_and_writes_nothing(
    quick_lock_gateway: Gateway,
) -> None:
    # Found by probing: a database held locked for 8 s made login and key creation answer 500.
    gateway = quick_lock_gateway
    admin = gateway.admin()
    holder = sa.create_engine(f"sqlite:///{gateway.settings.data_dir / 'sublane.db'}")
    connection = holder.connect()
    connection.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        sign_in = {"username": "admin", "password": "admin-pass-1"}
        login = gateway.client().post("/api/auth/login", json=sign_in)
        assert login.status_code == 503 and _code(login) == "storage_unavailable"
        assert login.headers["Retry-After"] == "1"
        key = admin.post("/api/me/keys", json={"name": "during-lock", "group_id": 1})
        assert key.status_code == 503 and _code(key) == "storage_unavailable"
    finally:
        connection.exec_driver_sql("ROLLBACK")
        connection.close()
        holder.dispose()
    keys = admin.get("/api/me/keys").json()["items"]
    assert [item["name"] for item in keys] == []  # nothing half-written
    assert admin.post("/api/me/keys", json={"name": "after-lock", "group_id": 1}).status_code == 201


def test_ops_4_repeated_failed_sign_ins_are_slowed(data_dir: Path) -> None:
    # Found by probing: no throttling, and every try cost an unauthenticated Argon2 hash.
    settings = make_settings(data_dir, login_failures_max=3, login_failure_window_s=60)
    with running_gateway(settings) as gateway:
        client = gateway.client()
        wrong = {"username": "admin", "password": "not-the-password"}
        assert [client.post("/api/auth/login", json=wrong).status_code for _ in range(3)] == [401] * 3
        throttled = client.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"})
        assert throttled.status_code == 429 and _code(throttled) == "too_many_attempts"
        assert 1 <= int(throttled.headers["Retry-After"]) <= 60
        # Per address too: other names from the same client are slowed as well …
        other = client.post("/api/auth/login", json={"username": "someone", "password": "x"})
        assert other.status_code == 429
        # … until the window has passed.
        gateway.clock.advance(61)
        assert (
            client.post("/api/auth/login", json={"username": "admin", "password": "admin-pass-1"}).status_code
            == 200
        )


def test_ops_4_repeated_authorization_headers_must_agree(gateway: Gateway, admin: httpx.Client) -> None:
    # Found by probing: two Authorization headers with different values: the first one won.
    secret = admin.post("/api/me/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    client = gateway.client()
    good = [("authorization", f"Bearer {secret}")]
    assert client.get("/v1/models", headers=good).status_code == 200
    both = [*good, ("authorization", "Bearer sl_someone-elses-key")]
    refused = client.get("/v1/models", headers=both)
    assert refused.status_code == 401 and "disagree" in refused.json()["error"]["message"]


def test_ops_6_origin_checks_compare_the_scheme(admin: httpx.Client, gateway: Gateway) -> None:
    # Found by probing: the Origin check ignored the scheme.
    https_twin = gateway.url.replace("http://", "https://")
    response = admin.post("/api/groups", json={"name": "team"}, headers={"Origin": https_twin})
    assert response.status_code == 403 and _code(response) == "cross_origin"
    assert (
        admin.post("/api/groups", json={"name": "team"}, headers={"Origin": gateway.url}).status_code == 201
    )


def test_ops_6_behind_a_trusted_tls_proxy_cookies_are_secure_and_origins_https(data_dir: Path) -> None:
    settings = make_settings(data_dir, trusted_proxies=["127.0.0.0/8"])
    with running_gateway(settings) as gateway:
        client = gateway.client()
        proxied = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "sublane.example.com"}
        sign_in = {"username": "admin", "password": "admin-pass-1"}
        login = client.post("/api/auth/login", json=sign_in, headers=proxied)
        assert login.status_code == 200
        assert "secure" in login.headers["set-cookie"].lower()
        # The client (httpx) keeps Secure cookies for https; the proxy would pass it on: send it.
        proxied["Cookie"] = login.headers["set-cookie"].split(";", 1)[0]
        ok = client.post(
            "/api/groups", json={"name": "a"}, headers={**proxied, "Origin": "https://sublane.example.com"}
        )
        assert ok.status_code == 201
        plain = client.post(
            "/api/groups", json={"name": "b"}, headers={**proxied, "Origin": "http://sublane.example.com"}
        )
        assert plain.status_code == 403
    # Not from a trusted proxy: the forwarded headers are ignored.
    with running_gateway(make_settings(data_dir)) as direct:
        login = direct.client().post("/api/auth/login", json=sign_in, headers=proxied)
        assert "secure" not in login.headers["set-cookie"].lower()
