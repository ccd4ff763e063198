"""Token endpoints and PKCE logins of OpenAI, Claude and Google."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from sublane_sim import RefreshOutcome, Simulator, decode_jwt_payload, pkce_s256

OPENAI_CLIENT = "app_EMoamEEZ73f0CkXaXp7hrann"
CLAUDE_CLIENT = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
VERIFIER = "a-very-secret-code-verifier-with-enough-entropy-0123456789"


def authorize(http: httpx.Client, url: str, **params: str) -> dict[str, str]:
    response = http.get(url, params=params, follow_redirects=False)
    assert response.status_code == 302
    location = urlparse(response.headers["location"])
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert f"{location.scheme}://{location.netloc}{location.path}" == params["redirect_uri"]
    return query


# == OpenAI =======================================================================================


def test_openai_pkce_login(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex", email="dev@example.test")
    sim.prepare_login("codex", account.id)
    redirect = "http://localhost:1455/auth/callback"
    query = authorize(
        http,
        f"{sim.openai_auth_url}/oauth/authorize",
        response_type="code",
        client_id=OPENAI_CLIENT,
        redirect_uri=redirect,
        scope="openid email profile offline_access",
        code_challenge=pkce_s256(VERIFIER),
        code_challenge_method="S256",
        state="st-1",
    )
    assert query["state"] == "st-1"
    token_url = f"{sim.openai_auth_url}/oauth/token"
    form = {
        "grant_type": "authorization_code",
        "client_id": OPENAI_CLIENT,
        "code": query["code"],
        "redirect_uri": redirect,
    }
    wrong = http.post(token_url, data={**form, "code_verifier": "not-it"})
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    tokens = http.post(token_url, data={**form, "code_verifier": VERIFIER}).json()
    claims = decode_jwt_payload(tokens["id_token"])
    assert claims["email"] == "dev@example.test"
    auth_claim = claims["https://api.openai.com/auth"]
    assert auth_claim["chatgpt_account_id"] == account.account_id
    assert auth_claim["chatgpt_plan_type"] == "plus"
    assert auth_claim["chatgpt_user_id"]
    assert decode_jwt_payload(tokens["access_token"])["exp"] > sim.clock.now()
    again = http.post(token_url, data={**form, "code_verifier": VERIFIER})
    assert again.status_code == 400, "codes are single use"


def test_authorize_without_prepared_account_creates_one(sim: Simulator, http: httpx.Client) -> None:
    query = authorize(
        http,
        f"{sim.openai_auth_url}/oauth/authorize",
        client_id=OPENAI_CLIENT,
        redirect_uri="http://localhost:1455/auth/callback",
        state="s",
    )
    assert query["code"]
    assert [a.provider for a in sim.accounts()] == ["codex"]


def test_openai_refresh_rotates_and_detects_reuse(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.openai_auth_url}/oauth/token"
    first = http.post(
        url,
        json={
            "client_id": OPENAI_CLIENT,
            "grant_type": "refresh_token",
            "refresh_token": account.refresh_token,
        },
    )
    assert first.status_code == 200
    rotated = first.json()
    assert rotated["refresh_token"] != account.refresh_token
    assert {"access_token", "id_token", "token_type", "expires_in"} <= set(rotated)
    reused = http.post(url, json={"grant_type": "refresh_token", "refresh_token": account.refresh_token})
    assert reused.status_code == 401
    assert reused.json()["error"]["code"] == "refresh_token_reused"
    form = http.post(
        url,
        data={
            "grant_type": "refresh_token",
            "refresh_token": rotated["refresh_token"],
            "scope": "openid profile email",
        },
    )
    assert form.status_code == 200, "form bodies work too"
    assert sim.account(account.id).refresh_token == form.json()["refresh_token"]
    assert sim.counters(account.id).refreshes == 3


@pytest.mark.parametrize(
    ("revoke", "code"),
    [
        ("revoke_refresh_token", "refresh_token_invalidated"),
        ("expire_refresh_token", "refresh_token_expired"),
    ],
)
def test_openai_permanent_refresh_failures(
    sim: Simulator, http: httpx.Client, revoke: str, code: str
) -> None:
    account = sim.create_account("codex")
    getattr(sim, revoke)(account.id)
    response = http.post(
        f"{sim.openai_auth_url}/oauth/token",
        json={"grant_type": "refresh_token", "refresh_token": account.refresh_token},
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == code


def test_openai_scripted_refresh_outcomes(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.script_refresh(
        account.id,
        RefreshOutcome(kind="error", status=500),
        RefreshOutcome(kind="error", status=429, retry_after="30"),
        RefreshOutcome(kind="invalid_grant"),
        RefreshOutcome(kind="refresh_token_reused"),
        RefreshOutcome(omit_id_token=True, omit_refresh_token=True),
    )
    url = f"{sim.openai_auth_url}/oauth/token"
    payload = {"grant_type": "refresh_token", "refresh_token": account.refresh_token}
    assert http.post(url, json=payload).status_code == 500
    limited = http.post(url, json=payload)
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "30")
    invalid = http.post(url, json=payload)
    assert (invalid.status_code, invalid.json()["error"]) == (400, "invalid_grant")
    reused = http.post(url, json=payload)
    assert reused.json()["error"]["code"] == "refresh_token_reused"
    partial = http.post(url, json=payload).json()
    assert "id_token" not in partial and "refresh_token" not in partial
    assert http.post(url, json=payload).status_code == 200, "the old refresh token stayed valid"


def test_refresh_delay(sim: Simulator) -> None:
    account = sim.create_account("codex")
    sim.script_refresh(account.id, RefreshOutcome(delay_ms=500))
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=httpx.Timeout(5, read=0.2)) as client:
        client.post(
            f"{sim.openai_auth_url}/oauth/token",
            json={"grant_type": "refresh_token", "refresh_token": account.refresh_token},
        )


# == Claude =======================================================================================


def test_claude_pkce_login_and_rotation(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude", email="max@example.test")
    sim.prepare_login("claude", account.id)
    redirect = "https://console.anthropic.com/oauth/code/callback"
    query = authorize(
        http,
        f"{sim.claude_auth_url}/oauth/authorize",
        code="true",
        client_id=CLAUDE_CLIENT,
        response_type="code",
        redirect_uri=redirect,
        scope="user:profile user:inference",
        code_challenge=pkce_s256(VERIFIER),
        code_challenge_method="S256",
        state="xyz",
    )
    url = f"{sim.claude_auth_url}/v1/oauth/token"
    exchanged = http.post(
        url,
        json={
            "grant_type": "authorization_code",
            "code": f"{query['code']}#xyz",
            "state": "xyz",
            "client_id": CLAUDE_CLIENT,
            "redirect_uri": redirect,
            "code_verifier": VERIFIER,
        },
    )
    assert exchanged.status_code == 200
    tokens = exchanged.json()
    assert tokens["access_token"].startswith("sk-ant-oat01-")
    assert tokens["refresh_token"].startswith("sk-ant-ort01-")
    assert tokens["account"]["email_address"] == "max@example.test"
    refreshed = http.post(
        url,
        json={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": CLAUDE_CLIENT,
        },
    )
    assert refreshed.status_code == 200 and refreshed.json()["refresh_token"] != tokens["refresh_token"]
    stale = http.post(url, json={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]})
    assert stale.status_code == 400
    assert stale.json() == {
        "error": "invalid_grant",
        "error_description": "Refresh token not found or invalid",
    }


def test_claude_refresh_429_with_retry_after(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    sim.script_refresh(account.id, RefreshOutcome(kind="error", status=429, retry_after="120"))
    response = http.post(
        f"{sim.claude_auth_url}/v1/oauth/token",
        json={"grant_type": "refresh_token", "refresh_token": account.refresh_token},
    )
    assert response.status_code == 429 and response.headers["retry-after"] == "120"


# == Google =======================================================================================


def test_google_login_refresh_and_revocation(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity", email="g@example.test")
    sim.prepare_login("antigravity", account.id)
    redirect = "http://localhost:51121/oauth-callback"
    query = authorize(
        http,
        f"{sim.google_auth_url}/o/oauth2/v2/auth",
        access_type="offline",
        response_type="code",
        redirect_uri=redirect,
        state="g1",
    )
    url = f"{sim.google_auth_url}/token"
    exchanged = http.post(
        url,
        data={
            "grant_type": "authorization_code",
            "code": query["code"],
            "redirect_uri": redirect,
            "client_id": "x",
            "client_secret": "y",
        },
    ).json()
    assert exchanged["refresh_token"] and exchanged["expires_in"] == 3599
    refreshed = http.post(
        url, data={"grant_type": "refresh_token", "refresh_token": exchanged["refresh_token"]}
    )
    assert refreshed.status_code == 200
    assert "refresh_token" not in refreshed.json(), "Google does not rotate refresh tokens"
    again = http.post(url, data={"grant_type": "refresh_token", "refresh_token": exchanged["refresh_token"]})
    assert again.status_code == 200
    userinfo = http.get(
        f"{sim.google_auth_url}/oauth2/v2/userinfo?alt=json",
        headers={"authorization": f"Bearer {again.json()['access_token']}"},
    )
    assert userinfo.json()["email"] == "g@example.test"
    sim.revoke_refresh_token(account.id)
    revoked = http.post(
        url, data={"grant_type": "refresh_token", "refresh_token": exchanged["refresh_token"]}
    )
    assert revoked.status_code == 400
    assert revoked.json() == {
        "error": "invalid_grant",
        "error_description": "Token has been expired or revoked.",
    }


def test_google_transient_refresh_failure(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("antigravity")
    sim.script_refresh(account.id, RefreshOutcome(kind="error", status=503))
    url = f"{sim.google_auth_url}/token"
    form = {"grant_type": "refresh_token", "refresh_token": account.refresh_token}
    assert http.post(url, data=form).status_code == 503
    assert http.post(url, data=form).status_code == 200
