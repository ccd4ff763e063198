"""The `sim` fixture the package registers through the `pytest11` entry point."""

from __future__ import annotations

import httpx

from sublane_sim import Simulator


def test_fixture_urls_and_env(sim: Simulator) -> None:
    assert sim.base_url.startswith("http://127.0.0.1:")
    assert sim.codex_base_url == f"{sim.base_url}/backend-api"
    for url in (
        sim.claude_base_url,
        sim.antigravity_base_url,
        sim.openai_auth_url,
        sim.claude_auth_url,
        sim.google_auth_url,
    ):
        assert url == sim.base_url
    assert sim.env() == {
        "SUBLANE_CODEX_BASE_URL": sim.codex_base_url,
        "SUBLANE_OPENAI_AUTH_URL": sim.base_url,
        "SUBLANE_CLAUDE_BASE_URL": sim.base_url,
        "SUBLANE_CLAUDE_AUTH_URL": sim.base_url,
        "SUBLANE_ANTIGRAVITY_BASE_URL": sim.base_url,
        "SUBLANE_GOOGLE_AUTH_URL": sim.base_url,
        "SUBLANE_GOOGLE_AUTHORIZE_URL": f"{sim.base_url}/o/oauth2/v2/auth",
        "SUBLANE_GOOGLE_USERINFO_URL": f"{sim.base_url}/oauth2/v2/userinfo",
        "SUBLANE_OPENAI_BASE_URL": f"{sim.base_url}/openai/v1",
    }
    assert httpx.get(f"{sim.base_url}/_sim/health", timeout=5).json()["ok"] is True


def test_each_test_starts_clean_first(sim: Simulator) -> None:
    sim.create_account("codex")
    sim.advance_clock(10_000)


def test_each_test_starts_clean_second(sim: Simulator) -> None:
    import time

    assert sim.accounts() == []
    assert abs(sim.clock.now() - time.time()) < 5


async def test_usable_from_async_tests(sim: Simulator) -> None:
    account = sim.create_account("antigravity")
    async with httpx.AsyncClient(timeout=5) as client:
        response = await client.get(
            f"{sim.google_auth_url}/oauth2/v2/userinfo",
            headers={"authorization": f"Bearer {account.access_token}"},
        )
    assert response.json()["email"] == account.email


def test_standalone_simulator_context_manager() -> None:
    with Simulator(seed=7) as other:
        account = other.create_account("claude")
        assert httpx.head(f"{other.base_url}/", timeout=5).status_code == 200
    again = Simulator(seed=7)
    assert again.create_account("claude").api_key == account.api_key, "seeded secrets are reproducible"
