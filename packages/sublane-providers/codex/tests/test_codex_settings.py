"""The provider's own settings: the same ``SUBLANE_*`` variables and defaults as when core held them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sublane_core import Settings
from sublane_provider_codex import PROVIDER, CodexSettings
from sublane_providers import provider_plugin


def test_conf_codex_upstream_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no ./.env
    settings = CodexSettings()
    assert settings.codex_base_url == "https://chatgpt.com/backend-api"
    assert settings.openai_auth_url == "https://auth.openai.com"


def test_conf_codex_reads_its_sublane_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUBLANE_CODEX_BASE_URL", "http://127.0.0.1:9/up")
    assert CodexSettings().codex_base_url == "http://127.0.0.1:9/up"
    (tmp_path / ".env").write_text("SUBLANE_CODEX_BASE_URL=http://127.0.0.1:9/from-dotenv\n")
    monkeypatch.delenv("SUBLANE_CODEX_BASE_URL")
    assert CodexSettings().codex_base_url == "http://127.0.0.1:9/from-dotenv"


def test_the_codex_distribution_registers_its_plugin() -> None:
    assert provider_plugin("codex") is PROVIDER
    assert PROVIDER.settings is CodexSettings


def test_the_plugin_takes_its_settings_from_a_composed_settings_object(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    composed = type("Composed", (Settings, CodexSettings), {})
    settings = composed(codex_base_url="http://127.0.0.1:9/composed")  # type: ignore[call-arg]
    assert PROVIDER.settings_from(settings).codex_base_url == "http://127.0.0.1:9/composed"
    monkeypatch.setenv("SUBLANE_CODEX_BASE_URL", "http://127.0.0.1:9/env")
    assert (
        PROVIDER.settings_from(Settings()).codex_base_url == "http://127.0.0.1:9/env"
    )  # plain settings: the environment
