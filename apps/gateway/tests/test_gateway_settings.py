"""The gateway's settings: core's and every installed provider's, read as one object."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field, ValidationError

from sublane_core import Settings
from sublane_gateway._settings import compose_settings, gateway_settings, gateway_settings_help
from sublane_providers import (
    ProviderPlugin,
    ProviderRegistrationError,
    ProviderSettings,
    provider_plugins,
)


class _Echo(ProviderSettings):
    echo_base_url: str = Field("https://echo.invalid", description="Echo upstream.")


class _Clash(ProviderSettings):
    port: int = 1


def _plugin(name: str, settings: type[ProviderSettings]) -> ProviderPlugin[ProviderSettings]:
    def build(*_: object) -> object:
        raise AssertionError("not built here")

    return ProviderPlugin(name=name, settings=settings, build_adapter=build, parse_credentials=build)  # type: ignore[arg-type]


def test_every_installed_provider_setting_is_a_gateway_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = gateway_settings(_env_file=None)
    assert isinstance(settings, Settings)
    plugins = provider_plugins()
    assert plugins
    for plugin in plugins:
        own = plugin.settings_from(settings)
        for name in plugin.settings.model_fields:
            assert getattr(own, name) == getattr(settings, name)
    variables = [row[0] for row in gateway_settings_help()]
    assert len(variables) == len(set(variables)) == len(type(settings).model_fields)


def test_a_provider_setting_is_read_from_the_environment_and_validated(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    composed = compose_settings([_plugin("echo", _Echo)])
    monkeypatch.setenv("SUBLANE_ECHO_BASE_URL", "http://127.0.0.1:9")
    settings = composed(_env_file=None)  # type: ignore[call-arg]
    assert settings.echo_base_url == "http://127.0.0.1:9"  # type: ignore[attr-defined]
    assert composed(echo_base_url="http://given").echo_base_url == "http://given"  # type: ignore[call-arg,attr-defined]
    with pytest.raises(ValidationError):
        composed(port=70000)


def test_two_owners_of_one_setting_are_refused() -> None:
    with pytest.raises(ProviderRegistrationError, match="'port'"):
        compose_settings([_plugin("clash", _Clash)])
    with pytest.raises(ProviderRegistrationError, match="echo_base_url"):
        compose_settings([_plugin("echo", _Echo), _plugin("echo2", _Echo)])
