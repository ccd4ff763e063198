"""The Codex adapter passes the shared contract kit against the simulator."""

from __future__ import annotations

from typing import Any

import httpx

from sublane_provider_codex import CodexAdapter
from sublane_provider_codex._request import upstream_headers
from sublane_providers import ProviderAdapter
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


def test_client_headers_are_chosen_alike_on_every_call_whatever_their_case() -> None:
    """The per-name choice is remembered: the second call with the same names (any case) sends
    the same headers as the first, and what is not passed through never goes."""
    client = {"User-Agent": "codex", "X-Codex-Turn": "1", "Session_Id": "s", "Cookie": "c", "x-api-key": "k"}
    for bound in (True, False, True):
        first = upstream_headers(client, access_token="t", account_id=None, bound=bound)
        again = upstream_headers(client, access_token="t", account_id=None, bound=bound)
        first.pop("x-client-request-id", None), again.pop("x-client-request-id", None)
        assert first == again
        sent = {"user-agent": "codex", "x-codex-turn": "1", "originator": "codex_cli_rs"}
        assert first == {**sent, **({"session_id": "s"} if bound else {}), "authorization": "Bearer t"}
