"""The Codex adapter passes the shared contract kit against the simulator."""

from __future__ import annotations

from typing import Any

import httpx

from sublane_providers import ProviderAdapter
from sublane_providers.codex import CodexAdapter
from sublane_providers.testing import AdapterContract
from sublane_sim import Simulator


class TestCodexAdapterContract(AdapterContract):
    provider = "codex"
    model = "gpt-5-codex"

    def make_adapter(self, sim: Simulator, http: httpx.AsyncClient) -> ProviderAdapter:
        return CodexAdapter(
            base_url=sim.codex_base_url, auth_url=sim.openai_auth_url, http=http, metadata_timeout=10
        )

    def native_body(self) -> dict[str, Any]:
        return {"model": self.model, "input": "say hi", "store": False, "stream": True}
