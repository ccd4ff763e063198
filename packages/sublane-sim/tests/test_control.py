"""The `/_sim/` HTTP control API and the credential files it hands out."""

from __future__ import annotations

import httpx

from sublane_sim import Simulator, decode_jwt_payload


def test_create_accounts_and_credential_shapes(sim: Simulator, http: httpx.Client) -> None:
    base = f"{sim.base_url}/_sim"
    codex = http.post(f"{base}/accounts", json={"provider": "codex", "plan": "pro", "account_id": "c1"})
    assert codex.status_code == 201
    auth_json = codex.json()["credentials"]
    assert set(auth_json) == {"auth_mode", "OPENAI_API_KEY", "tokens", "last_refresh"}
    assert auth_json["OPENAI_API_KEY"] is None
    assert set(auth_json["tokens"]) == {"id_token", "access_token", "refresh_token", "account_id"}
    claim = decode_jwt_payload(auth_json["tokens"]["id_token"])["https://api.openai.com/auth"]
    assert claim["chatgpt_account_id"] == auth_json["tokens"]["account_id"]
    assert claim["chatgpt_plan_type"] == "pro"
    claude = http.post(f"{base}/accounts", json={"provider": "claude"}).json()["credentials"]
    oauth = claude["claudeAiOauth"]
    assert set(oauth) == {
        "accessToken",
        "refreshToken",
        "expiresAt",
        "scopes",
        "subscriptionType",
        "rateLimitTier",
    }
    assert oauth["expiresAt"] > sim.clock.now() * 1000
    assert oauth["subscriptionType"] == "max"
    google = http.post(f"{base}/accounts", json={"provider": "antigravity"}).json()["credentials"]
    assert google["type"] == "antigravity"
    assert {"access_token", "refresh_token", "expires_in", "timestamp", "email", "project_id"} <= set(google)
    assert http.get(f"{base}/accounts/c1/credentials").json() == auth_json
    assert len(http.get(f"{base}/accounts").json()["accounts"]) == 3


def test_scripting_counters_requests_and_clock(sim: Simulator, http: httpx.Client) -> None:
    base = f"{sim.base_url}/_sim"
    account = http.post(f"{base}/accounts", json={"provider": "codex"}).json()
    account_id = account["id"]
    scripted = http.post(
        f"{base}/accounts/{account_id}/script", json={"behaviours": [{"kind": "error", "status": 503}]}
    )
    assert scripted.json() == {"*": [scripted.json()["*"][0]]}
    headers = {"authorization": f"Bearer {account['api_key']}"}
    body = {"model": "gpt-5-codex", "stream": True, "store": False, "input": []}
    assert http.post(f"{sim.codex_base_url}/codex/responses", json=body, headers=headers).status_code == 503
    http.put(f"{base}/accounts/{account_id}/default", json={"kind": "error", "status": 502})
    assert http.post(f"{sim.codex_base_url}/codex/responses", json=body, headers=headers).status_code == 502
    counters = http.get(f"{base}/accounts/{account_id}/counters").json()
    assert counters["model_requests"] == 2 and counters["by_endpoint"] == {"codex.responses": 2}
    log = http.get(f"{base}/requests", params={"account_id": account_id}).json()["requests"]
    assert [r["status"] for r in log] == [503, 502]
    assert http.get(f"{base}/counters").json()[account_id]["requests"] == 2
    quota = http.put(
        f"{base}/accounts/{account_id}/quota",
        json={"window": "primary", "used_percent": 100, "reset_in_s": 60},
    ).json()
    assert quota["primary"]["used_percent"] == 100
    before = http.get(f"{base}/clock").json()["now"]
    after = http.post(f"{base}/clock", json={"seconds": 61}).json()["now"]
    assert after - before >= 61
    assert http.get(f"{base}/accounts/{account_id}/quota").json()["primary"]["used_percent"] == 0
    http.post(f"{base}/accounts/{account_id}/refresh-script", json={"outcomes": [{"kind": "invalid_grant"}]})
    refreshed = http.post(
        f"{sim.openai_auth_url}/oauth/token",
        json={"grant_type": "refresh_token", "refresh_token": account["refresh_token"]},
    )
    assert refreshed.status_code == 400
    assert http.post(f"{base}/accounts/{account_id}/expire-access").status_code == 200
    assert http.delete(f"{base}/requests").status_code == 200
    assert http.get(f"{base}/requests").json()["requests"] == []


def test_bad_control_input(sim: Simulator, http: httpx.Client) -> None:
    base = f"{sim.base_url}/_sim"
    assert http.post(f"{base}/accounts", json={"provider": "bard"}).status_code == 400
    assert http.get(f"{base}/accounts/nobody").status_code == 404
    account_id = http.post(f"{base}/accounts", json={"provider": "claude"}).json()["id"]
    bad = http.post(
        f"{base}/accounts/{account_id}/script", json={"behaviours": [{"kind": "ok", "turbo": True}]}
    )
    assert bad.status_code == 400 and "turbo" in bad.json()["error"]
    assert http.patch(f"{base}/accounts/{account_id}", json={"email": "x"}).status_code == 400
    patched = http.patch(f"{base}/accounts/{account_id}", json={"quota_cost": 5})
    assert patched.json()["quota_cost"] == 5
    assert http.put(f"{base}/accounts/{account_id}/quota", json={"window": "primary"}).status_code == 404


def test_reset_and_unknown_routes(sim: Simulator, http: httpx.Client) -> None:
    base = f"{sim.base_url}/_sim"
    http.post(f"{base}/accounts", json={"provider": "claude"})
    missing = http.get(f"{sim.base_url}/v1/nothing-here")
    assert missing.status_code == 404
    assert sim.requests(endpoint="unknown")[-1].path == "/v1/nothing-here"
    assert http.post(f"{base}/reset").json() == {"ok": True}
    assert sim.accounts() == [] and sim.requests() == []
    health = http.get(f"{base}/health").json()
    assert health["urls"]["SUBLANE_CODEX_BASE_URL"].endswith("/backend-api")


def test_a_numeric_retry_after_scripted_over_http_is_sent_as_given(
    sim: Simulator, http: httpx.Client
) -> None:
    """JSON has numbers: ``"retry_after": 300`` scripts a 429 with ``Retry-After: 300`` (it made
    every scripted answer a 500 from the simulator itself), and a value that is neither a string
    nor a number is refused (400) when scripted."""
    base = f"{sim.base_url}/_sim"
    account = http.post(f"{base}/accounts", json={"provider": "codex"}).json()
    behaviour = {"kind": "error", "status": 429, "retry_after": 300}
    assert (
        http.post(f"{base}/accounts/{account['id']}/script", json={"behaviours": [behaviour]}).status_code
        == 200
    )
    headers = {"authorization": f"Bearer {account['api_key']}"}
    body = {"model": "gpt-5-codex", "stream": True, "store": False, "input": []}
    answer = http.post(f"{sim.codex_base_url}/codex/responses", json=body, headers=headers)
    assert answer.status_code == 429 and answer.headers["retry-after"] == "300"
    for bad in (True, [1], {"s": 1}):
        refused = http.post(
            f"{base}/accounts/{account['id']}/script", json={"behaviours": [dict(behaviour, retry_after=bad)]}
        )
        assert refused.status_code == 400, refused.text
    outcome = {"kind": "error", "status": 429, "retry_after": 2.5}
    scripted = http.post(f"{base}/accounts/{account['id']}/refresh-script", json={"outcomes": [outcome]})
    assert scripted.status_code == 200
