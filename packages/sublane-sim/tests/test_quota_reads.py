"""Quota reads are counted and can be scripted: failed and stale answers (issue #15's tests need them)."""

from __future__ import annotations

import httpx

from sublane_sim import QuotaReadOutcome, Simulator


def test_quota_reads_are_counted_per_account_and_provider(sim: Simulator, http: httpx.Client) -> None:
    codex, claude, antigravity = (sim.create_account(p) for p in ("codex", "claude", "antigravity"))
    http.get(
        f"{sim.codex_base_url}/wham/usage",
        headers={"authorization": f"Bearer {codex.access_token}", "chatgpt-account-id": codex.account_id},
    )
    http.get(
        f"{sim.claude_base_url}/api/oauth/usage",
        headers={"authorization": f"Bearer {claude.access_token}", "anthropic-beta": "oauth-2025-04-20"},
    )
    http.post(f"{sim.antigravity_base_url}/v1internal:fetchAvailableModels", json={},
              headers={"authorization": f"Bearer {antigravity.access_token}"})  # fmt: skip
    assert [sim.quota_reads(a.id) for a in (codex, claude, antigravity)] == [1, 1, 1]
    assert sim.quota_reads() == 3
    assert sim.counters(codex.id).quota_reads == 1


def test_scripted_failed_and_stale_quota_reads(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("codex")
    sim.set_quota(account.id, "primary", used_percent=20)
    sim.script_quota_reads(
        account.id, QuotaReadOutcome(kind="error", status=503), QuotaReadOutcome(kind="stale")
    )
    url = f"{sim.codex_base_url}/wham/usage"
    headers = {"authorization": f"Bearer {account.access_token}", "chatgpt-account-id": account.account_id}
    assert http.get(url, headers=headers).status_code == 503
    stale = http.get(url, headers=headers).json()["rate_limit"]["primary_window"]
    assert stale["used_percent"] == 100 and stale["reset_at"] < sim.clock.now()  # already reset
    now = http.get(url, headers=headers).json()["rate_limit"]["primary_window"]
    assert now["used_percent"] == 20
    assert sim.quota_reads(account.id) == 3


def test_quota_reads_script_through_the_control_api(sim: Simulator, http: httpx.Client) -> None:
    account = sim.create_account("claude")
    answer = http.post(
        f"{sim.base_url}/_sim/accounts/{account.id}/quota-reads", json={"outcomes": [{"kind": "error"}]}
    )
    assert answer.status_code == 200 and answer.json() == {"ok": True, "quota_reads": 0}
    usage = http.get(f"{sim.claude_base_url}/api/oauth/usage",
                     headers={"authorization": f"Bearer {account.access_token}",
                              "anthropic-beta": "oauth-2025-04-20"})  # fmt: skip
    assert usage.status_code == 500
