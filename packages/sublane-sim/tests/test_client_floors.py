"""CLIENT-3: model version floors, enforced as the real upstreams enforce them (``_floors``)."""

from __future__ import annotations

import httpx

from sublane_sim import SimAccount, Simulator


def _codex(account: SimAccount, **headers: str) -> dict[str, str]:
    return {
        "authorization": f"Bearer {account.access_token}",
        "chatgpt-account-id": account.account_id,
        **headers,
    }


CODEX_BODY = {"model": "gpt-5.5", "stream": True, "store": False, "input": "hi"}


def test_client_3_codex_floor_is_listed_and_enforced(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    url = f"{sim.codex_base_url}/codex/responses"
    assert http.post(url, json=CODEX_BODY, headers=_codex(account)).status_code == 200  # no floor yet
    sim.set_client_floor("codex", "gpt-5.5", "0.172.0")
    models = http.get(f"{sim.codex_base_url}/codex/models", headers=_codex(account)).json()["models"]
    listed = {entry["slug"]: entry.get("minimal_client_version") for entry in models}
    assert listed["gpt-5.5"] == "0.172.0" and listed["gpt-5-codex"] is None
    for headers in ({"version": "0.171.0"}, {"user-agent": "codex_exec/0.171.0 (Linux; x86_64)"}, {}):
        refused = http.post(url, json=CODEX_BODY, headers=_codex(account, **headers))
        assert refused.status_code == 400, headers
        assert refused.json()["detail"] == (
            "The 'gpt-5.5' model requires a newer version of Codex. "
            "Please upgrade to the latest app or CLI and try again."
        )
    newer = _codex(account, version="0.172.0", **{"user-agent": "codex_cli_rs/0.100.0 (Linux; x86_64)"})
    assert http.post(url, json=CODEX_BODY, headers=newer).status_code == 200  # `version` decides
    other = http.post(url, json=dict(CODEX_BODY, model="gpt-5-codex"), headers=_codex(account))
    assert other.status_code == 200  # the floor is the model's
    sim.set_client_floor("codex", "gpt-5.5", None)
    assert http.post(url, json=CODEX_BODY, headers=_codex(account)).status_code == 200


def test_client_3_claude_floor_is_enforced_on_claude_codes_user_agent(
    sim: Simulator, http: httpx.Client
) -> None:
    account = sim.create_account("claude")
    sim.set_client_floor("claude", "claude-opus-4-7", "2.1.400")
    headers = {
        "authorization": f"Bearer {account.access_token}",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "oauth-2025-04-20",
        "user-agent": "claude-cli/2.1.332 (external, cli)",
    }
    body = {"model": "claude-opus-4-7", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    refused = http.post(f"{sim.claude_base_url}/v1/messages", json=body, headers=headers)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["details"] == {"error_code": "claude_code_version_too_old"}
    assert error["message"] == (
        "Claude Code 2.1.332 does not support this model; version 2.1.400 or newer is required"
    )
    headers["user-agent"] = "claude-cli/2.1.400 (external, cli)"
    assert http.post(f"{sim.claude_base_url}/v1/messages", json=body, headers=headers).status_code == 200
