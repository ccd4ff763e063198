"""The provider's own settings: the same ``SUBLANE_*`` variables and defaults as when core held them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sublane_core import Settings
from sublane_provider_antigravity import PROVIDER, AntigravitySettings
from sublane_providers import provider_plugin


def test_conf_antigravity_upstream_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no ./.env
    settings = AntigravitySettings()
    assert settings.antigravity_base_url == "https://cloudcode-pa.googleapis.com"
    assert settings.google_auth_url == "https://oauth2.googleapis.com"
    assert settings.google_authorize_url == "https://accounts.google.com/o/oauth2/v2/auth"
    assert settings.google_userinfo_url == "https://www.googleapis.com/oauth2/v2/userinfo"


def test_conf_antigravity_reads_its_sublane_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUBLANE_ANTIGRAVITY_BASE_URL", "http://127.0.0.1:9/up")
    assert AntigravitySettings().antigravity_base_url == "http://127.0.0.1:9/up"
    (tmp_path / ".env").write_text("SUBLANE_ANTIGRAVITY_BASE_URL=http://127.0.0.1:9/from-dotenv\n")
    monkeypatch.delenv("SUBLANE_ANTIGRAVITY_BASE_URL")
    assert AntigravitySettings().antigravity_base_url == "http://127.0.0.1:9/from-dotenv"


def test_the_antigravity_distribution_registers_its_plugin() -> None:
    assert provider_plugin("antigravity") is PROVIDER
    assert PROVIDER.settings is AntigravitySettings


def test_the_plugin_takes_its_settings_from_a_composed_settings_object(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    composed = type("Composed", (Settings, AntigravitySettings), {})
    settings = composed(antigravity_base_url="http://127.0.0.1:9/composed")  # type: ignore[call-arg]
    assert PROVIDER.settings_from(settings).antigravity_base_url == "http://127.0.0.1:9/composed"
    monkeypatch.setenv("SUBLANE_ANTIGRAVITY_BASE_URL", "http://127.0.0.1:9/env")
    assert (
        PROVIDER.settings_from(Settings()).antigravity_base_url == "http://127.0.0.1:9/env"
    )  # plain settings: the environment
