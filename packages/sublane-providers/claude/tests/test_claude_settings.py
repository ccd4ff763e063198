"""The provider's own settings: the same ``SUBLANE_*`` variables and defaults as when core held them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sublane_core import Settings
from sublane_provider_claude import PROVIDER, ClaudeSettings
from sublane_providers import provider_plugin


def test_conf_claude_upstream_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no ./.env
    settings = ClaudeSettings()
    assert settings.claude_base_url == "https://api.anthropic.com"
    assert settings.claude_auth_url == "https://platform.claude.com"
    assert settings.claude_authorize_url == "https://claude.ai/oauth/authorize"
    assert settings.claude_models_fallback is True


def test_conf_claude_reads_its_sublane_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUBLANE_CLAUDE_BASE_URL", "http://127.0.0.1:9/up")
    assert ClaudeSettings().claude_base_url == "http://127.0.0.1:9/up"
    (tmp_path / ".env").write_text("SUBLANE_CLAUDE_BASE_URL=http://127.0.0.1:9/from-dotenv\n")
    monkeypatch.delenv("SUBLANE_CLAUDE_BASE_URL")
    assert ClaudeSettings().claude_base_url == "http://127.0.0.1:9/from-dotenv"


def test_the_claude_distribution_registers_its_plugin() -> None:
    assert provider_plugin("claude") is PROVIDER
    assert PROVIDER.settings is ClaudeSettings


def test_the_plugin_takes_its_settings_from_a_composed_settings_object(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    composed = type("Composed", (Settings, ClaudeSettings), {})
    settings = composed(claude_base_url="http://127.0.0.1:9/composed")  # type: ignore[call-arg]
    assert PROVIDER.settings_from(settings).claude_base_url == "http://127.0.0.1:9/composed"
    monkeypatch.setenv("SUBLANE_CLAUDE_BASE_URL", "http://127.0.0.1:9/env")
    assert (
        PROVIDER.settings_from(Settings()).claude_base_url == "http://127.0.0.1:9/env"
    )  # plain settings: the environment
