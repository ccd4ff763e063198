"""The parrot adapter passes the shared provider contract, against its own upstream (not the simulator)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sublane_provider_parrot import PROVIDER, ParrotAdapter, ParrotSettings
from sublane_provider_parrot.testing import ParrotUpstream
from sublane_providers import CredentialFormatError, ProviderAdapter, provider_plugin
from sublane_providers.testing import AdapterContract


class TestParrotAdapterContract(AdapterContract):
    provider = "parrot"
    model = "parrot-1"

    @pytest.fixture
    def upstream(self, parrot_server: tuple[ParrotUpstream, str]) -> ParrotUpstream:
        return parrot_server[0]

    @pytest.fixture
    def stand_in(self, parrot_server: tuple[ParrotUpstream, str]) -> str:
        return parrot_server[1]

    def make_adapter(self, sim: Any, http: httpx.AsyncClient) -> ProviderAdapter:
        return ParrotAdapter(base_url=sim, http=http, metadata_timeout=10)

    def native_body(self) -> dict[str, Any]:
        return {"model": self.model, "input": "say hi", "stream": True}


def test_the_parrot_distribution_registers_its_plugin() -> None:
    assert provider_plugin("parrot") is PROVIDER
    assert PROVIDER.settings is ParrotSettings


def test_parrot_settings_read_their_sublane_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBLANE_PARROT_BASE_URL", "http://127.0.0.1:1/parrot")
    assert ParrotSettings(_env_file=None).parrot_base_url == "http://127.0.0.1:1/parrot"  # type: ignore[call-arg]


def test_parrot_credential_file_without_a_refresh_token_is_refused() -> None:
    with pytest.raises(CredentialFormatError, match="refresh_token"):
        PROVIDER.parse_credentials({"access_token": "a"})
