"""Single sign-on with OpenID Connect (AUTH-2) against a real OpenID provider process.

The flow is walked as a browser would (the redirects followed by hand, so each step can be checked
and tampered with): SubLane's ``/start`` → the provider's authorization page (a form where the
test picks the user) → SubLane's ``/callback`` → a session. The browser flow itself is in
``tests/test_web.py``. The ID-token checks (signature, issuer, audience, expiry, nonce) are also
driven directly with tokens signed by a key of the test's own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from gateway_pool import Pool
from joserfc import jwt
from joserfc.jwk import RSAKey
from oidc_server import OidcProviderProcess, oidc_provider

from sublane_gateway._oidc import OidcError, check_claims

CLIENT_ID = "sublane"
CLIENT_SECRET = "sso-client-secret-SENTINEL"


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProviderProcess]:
    with oidc_provider() as running:
        yield running


def _sso_pool(make_pool: Callable[..., Pool], provider: OidcProviderProcess, **settings: Any) -> Pool:
    options: dict[str, Any] = {
        "oidc_issuer": provider.issuer,
        "oidc_client_id": CLIENT_ID,
        "oidc_client_secret": CLIENT_SECRET,
        "oidc_admin_value": "sublane-admins",
        "trusted_proxies": "127.0.0.1",  # the tests' browser is the trusted proxy: its Host is believed
        **settings,
    }
    return make_pool(**options)


def _start(client: httpx.Client) -> str:
    """``/start``: the provider's authorization URL (and the pending cookie in ``client``)."""
    started = client.get("/api/auth/oidc/start")
    assert started.status_code == 302, started.text
    location = started.headers["location"]
    query = parse_qs(urlsplit(location).query)
    assert query["response_type"] == ["code"] and query["client_id"] == [CLIENT_ID]
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["state"][0] and query["nonce"][0] and "openid" in query["scope"][0].split()
    return location


def _authorize(location: str, sub: str) -> str:
    """The provider's page, answered for ``sub``: SubLane's callback URL with the code."""
    answer = httpx.post(location, data={"sub": sub}, timeout=10)
    assert answer.status_code == 302, answer.text
    callback = answer.headers["location"]
    assert "/api/auth/oidc/callback?" in callback
    return callback


def _sign_in(pool: Pool, sub: str) -> tuple[httpx.Client, httpx.Response]:
    client = pool.gateway.client()
    back = client.get(_authorize(_start(client), sub))
    return client, back


def test_auth_2_an_unknown_user_is_created_as_a_member_when_allowed(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    pool = _sso_pool(make_pool, provider, oidc_auto_create=True, oidc_allowed_domains="example.org")
    provider.set_user("u-ada", email="ada@example.org", email_verified=True, name="Ada")
    client, back = _sign_in(pool, "u-ada")
    assert back.status_code == 302 and back.headers["location"] == "/requests"
    me = client.get("/api/me").json()
    assert me["user"]["username"] == "ada@example.org" and me["user"]["role"] == "member"
    assert [group["name"] for group in me["groups"]] == ["default"]
    # The same identity signs in again as the same user, not a new one.
    again, _ = _sign_in(pool, "u-ada")
    assert again.get("/api/me").json()["user"]["id"] == me["user"]["id"]
    users = [u["username"] for u in pool.admin.get("/api/users").json()["items"]]
    assert users.count("ada@example.org") == 1


def test_auth_2_auto_creation_only_as_configured(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    off = _sso_pool(make_pool, provider)
    provider.set_user("u-bob", email="bob@example.org", email_verified=True)
    _client, back = _sign_in(off, "u-bob")
    assert back.headers["location"] == "/?sso_error=sso_no_account"
    on = _sso_pool(make_pool, provider, oidc_auto_create=True, oidc_allowed_domains="example.org")
    provider.set_user("u-cy", email="cy@elsewhere.net", email_verified=True)
    _client, back = _sign_in(on, "u-cy")
    assert back.headers["location"] == "/?sso_error=sso_domain_not_allowed"
    provider.set_user("u-dan", email="dan@example.org", email_verified=False)
    _client, back = _sign_in(on, "u-dan")
    assert back.headers["location"] == "/?sso_error=sso_no_verified_email"


def _link(client: httpx.Client, sub: str) -> httpx.Response:
    """My account's link: ``POST /api/me/oidc/link`` → the provider, answered for ``sub`` → the callback."""
    started = client.post("/api/me/oidc/link")
    assert started.status_code == 200, started.text
    return client.get(_authorize(started.json()["authorization_url"], sub))


def _actions(pool: Pool) -> list[str]:
    return [entry["action"] for entry in pool.admin.get("/api/audit").json()["items"]]


def test_auth_2_an_identity_whose_email_is_an_existing_users_name_is_refused_not_signed_in(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    """Before: the e-mail linked and signed in as the user, passing their password and TOTP by."""
    pool = _sso_pool(make_pool, provider, oidc_auto_create=True)
    pool.gateway.add_member(pool.admin, "eve@example.org")
    provider.set_user("u-eve", email="eve@example.org", email_verified=True, groups=["sublane-admins"])
    client, back = _sign_in(pool, "u-eve")
    assert back.headers["location"] == "/?sso_error=account_exists"
    assert client.get("/api/me").status_code == 401  # no session
    provider.set_user("u-root", email="Admin", email_verified=True)  # the bootstrap admin's name
    client, back = _sign_in(pool, "u-root")
    assert back.headers["location"] == "/?sso_error=account_exists"
    assert client.get("/api/me").status_code == 401
    assert "user.sso_link" not in _actions(pool)
    names = [user["username"] for user in pool.admin.get("/api/users").json()["items"]]
    assert names.count("eve@example.org") == 1 and not any(
        name.startswith("eve@example.org-") for name in names
    )


def test_auth_2_a_signed_in_user_links_sso_from_my_account_then_signs_in_with_it(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    pool = _sso_pool(make_pool, provider)
    member, browser = pool.gateway.member(pool.admin, "eve@example.org")
    assert browser.get("/api/me").json()["sso"] == {"configured": True, "linked": False}
    provider.set_user("u-eve2", email="eve@example.org", email_verified=True, groups=["sublane-admins"])
    linked = _link(browser, "u-eve2")
    assert linked.headers["location"] == "/password?sso_linked=1"
    assert browser.get("/api/me").json()["sso"]["linked"] is True
    # Linked by issuer and subject: SSO signs her in (and the admin claim promotes), whatever e-mail.
    provider.set_user("u-eve2", email="eve.new@example.org", email_verified=True, groups=["sublane-admins"])
    client, back = _sign_in(pool, "u-eve2")
    assert back.headers["location"] == "/requests"
    me = client.get("/api/me").json()["user"]
    assert me["id"] == member["id"] and me["role"] == "admin"
    assert "user.sso_link" in _actions(pool)
    # An identity linked to someone else is not taken over by another user's link.
    _other, other_browser = pool.gateway.member(pool.admin, "mo")
    assert _link(other_browser, "u-eve2").headers["location"] == "/password?sso_error=sso_identity_in_use"
    # A link started by one user finishes only in that user's session.
    started = other_browser.post("/api/me/oidc/link").json()["authorization_url"]
    callback = _authorize(started, "u-mo")
    other_browser.post("/api/auth/logout")
    assert other_browser.get(callback).headers["location"] == "/password?sso_error=sso_link_not_signed_in"
    assert pool.gateway.client().post("/api/me/oidc/link").status_code == 401  # signed in only


def test_auth_2_link_by_email_only_when_enabled_and_never_for_an_admin(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    pool = _sso_pool(make_pool, provider, oidc_link_by_email=True)
    member = pool.gateway.add_member(pool.admin, "gil@example.org")
    admin = pool.gateway.add_member(pool.admin, "boss@example.org", role="admin")
    provider.set_user("u-gil", email="gil@example.org", email_verified=True)
    client, back = _sign_in(pool, "u-gil")
    assert back.headers["location"] == "/requests"
    assert client.get("/api/me").json()["user"]["id"] == member["id"]
    provider.set_user("u-boss", email="boss@example.org", email_verified=True)
    client, back = _sign_in(pool, "u-boss")
    assert back.headers["location"] == "/?sso_error=account_exists"  # never an admin by e-mail
    assert client.get("/api/me").status_code == 401 and admin["role"] == "admin"
    provider.set_user("u-gil-unverified", email="gil@example.org", email_verified=False)
    _client, back = _sign_in(pool, "u-gil-unverified")
    assert back.headers["location"] == "/?sso_error=sso_no_account"  # an unverified e-mail links nothing


def test_auth_2_redirect_uri_from_public_url_or_a_trusted_proxy_never_an_untrusted_host(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    def redirect_uri(pool: Pool, **headers: str) -> str | None:
        started = pool.gateway.client().get("/api/auth/oidc/start", headers=headers)
        assert started.status_code == 302
        location = started.headers["location"]
        found = parse_qs(urlsplit(location).query).get("redirect_uri")
        return found[0] if found else location

    untrusted = _sso_pool(make_pool, provider, trusted_proxies="")
    assert redirect_uri(untrusted, host="evil.example") == "/?sso_error=sso_public_url_required"
    assert redirect_uri(untrusted) == "/?sso_error=sso_public_url_required"
    public = _sso_pool(make_pool, provider, trusted_proxies="", public_url="https://sublane.example/")
    callback = "https://sublane.example/api/auth/oidc/callback"
    assert redirect_uri(public, host="evil.example", **{"x-forwarded-host": "evil.example"}) == callback
    behind = _sso_pool(make_pool, provider)  # the peer (127.0.0.1) is a trusted proxy
    forwarded = {"x-forwarded-host": "sso.example:8443", "x-forwarded-proto": "https"}
    assert redirect_uri(behind, **forwarded) == "https://sso.example:8443/api/auth/oidc/callback"
    linking = _sso_pool(make_pool, provider, trusted_proxies="")
    _user, browser = linking.gateway.member(linking.admin, "lin")
    refused = browser.post("/api/me/oidc/link", headers={"host": "evil.example"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "sso_public_url_required"


def test_auth_2_a_replayed_or_foreign_callback_is_refused(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    pool = _sso_pool(make_pool, provider, oidc_auto_create=True)
    provider.set_user("u-fay", email="fay@example.org", email_verified=True)
    # Another browser's callback (no pending sign-in here): refused.
    stranger = pool.gateway.client()
    _owner = pool.gateway.client()
    callback = _authorize(_start(_owner), "u-fay")
    assert stranger.get(callback).headers["location"] == "/?sso_error=sso_expired"
    # The code of one sign-in with the state of another, in one browser: the state does not match.
    browser = pool.gateway.client()
    first = _authorize(_start(browser), "u-fay")
    _second = _start(browser)  # the browser's pending sign-in is now the second one
    assert browser.get(first).headers["location"] == "/?sso_error=sso_state_mismatch"
    # A nonce of another sign-in: the second sign-in's state with the first's code.
    browser = pool.gateway.client()
    code_of_first = parse_qs(urlsplit(_authorize(_start(browser), "u-fay")).query)["code"][0]
    second_location = _start(browser)
    state_of_second = parse_qs(urlsplit(second_location).query)["state"][0]
    mixed = browser.get(f"/api/auth/oidc/callback?code={code_of_first}&state={state_of_second}")
    assert mixed.headers["location"] == "/?sso_error=sso_invalid_token"
    assert browser.get("/api/me").status_code == 401
    denied_browser = pool.gateway.client()
    location = _start(denied_browser)
    denied = httpx.post(location, data={"action": "deny", "sub": "u-fay"}, timeout=10)
    back = denied_browser.get(denied.headers["location"])
    assert back.headers["location"] == "/?sso_error=sso_denied"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"aud": "someone-else"}, "a foreign audience"),
        ({"iss": "https://evil.test"}, "another issuer"),
        ({"nonce": "other"}, "a wrong nonce"),
        ({"exp": 100}, "expired"),
    ],
)
def test_auth_2_id_token_claims_are_checked(change: dict[str, Any], reason: str) -> None:
    """A foreign audience, another issuer, a wrong nonce, an expired token: each refused."""
    now = int(time.time())
    claims = {
        "iss": "https://idp.test",
        "aud": CLIENT_ID,
        "sub": "x",
        "nonce": "n",
        "iat": now,
        "exp": now + 300,
    }
    assert check_claims(dict(claims), "https://idp.test", CLIENT_ID, "n")["sub"] == "x"
    with pytest.raises(OidcError, match="sso_invalid_token"):
        check_claims({**claims, **change}, "https://idp.test", CLIENT_ID, "n")
    assert reason


def test_auth_2_a_token_signed_by_another_key_is_refused(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    pool = _sso_pool(make_pool, provider)
    verifier = pool.gateway.app.state["gateway"]
    from sublane_gateway.management._oidc import _provider

    oidc = _provider(verifier)
    now = int(time.time())
    forged = jwt.encode(
        {"alg": "RS256", "kid": "attacker"},
        {"iss": provider.issuer, "aud": CLIENT_ID, "sub": "x", "nonce": "n", "iat": now, "exp": now + 300},
        RSAKey.generate_key(2048),
    )
    with pytest.raises(OidcError, match="sso_invalid_token"):
        asyncio.run(oidc.verify(forged, "n"))


def test_auth_2_the_sign_in_page_knows_whether_sso_is_on(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess
) -> None:
    plain = make_pool()
    assert plain.gateway.client().get("/api/auth/methods").json() == {"password": True, "oidc": False}
    start = plain.gateway.client().get("/api/auth/oidc/start")
    assert start.status_code == 302 and start.headers["location"] == "/?sso_error=sso_not_configured"
    sso = _sso_pool(make_pool, provider)
    assert sso.gateway.client().get("/api/auth/methods").json() == {"password": True, "oidc": True}


def test_auth_2_the_client_secret_never_reaches_logs_or_answers(
    make_pool: Callable[..., Pool], provider: OidcProviderProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    pool = _sso_pool(make_pool, provider, oidc_auto_create=True)
    provider.set_user("u-hal", email="hal@example.org", email_verified=True)
    client, _ = _sign_in(pool, "u-hal")
    assert CLIENT_SECRET not in caplog.text
    for path in ("/api/me", "/api/auth/methods"):
        assert CLIENT_SECRET not in client.get(path).text
