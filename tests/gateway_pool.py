"""A gateway wired to the upstream simulator, as the cross-package tests use it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sublane_core import Settings, signals
from sublane_gateway.testing import Gateway, make_settings
from sublane_sim import SimAccount, Simulator


@dataclass
class Pool:
    """A gateway whose default group holds simulator accounts, and a member key for it."""

    gateway: Gateway
    sim: Simulator
    admin: httpx.Client
    key: str
    sim_accounts: list[SimAccount]
    account_ids: list[int]
    finished: list[signals.RequestFinished] = field(default_factory=list)

    def client(self, key: str | None = None, **kwargs: Any) -> httpx.Client:
        """An HTTP client presenting the pool's key (or ``key``)."""
        client = self.gateway.client(**kwargs)
        client.headers["authorization"] = f"Bearer {key or self.key}"
        return client

    def sim_account_of(self, account_id: int) -> SimAccount:
        return self.sim_accounts[self.account_ids.index(account_id)]

    @property
    def runtime(self) -> Any:
        return self.gateway.app.state.client


def settings_for(sim: Simulator, data_dir: Path, **overrides: Any) -> Settings:
    urls = {name[len("SUBLANE_") :].lower(): value for name, value in sim.env().items()}
    return make_settings(data_dir, **{**urls, **overrides})
