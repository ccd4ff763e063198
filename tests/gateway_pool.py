"""A gateway wired to the upstream simulator, as the cross-package tests use it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from backend import backend_settings

from sublane_core import Settings, signals
from sublane_gateway.testing import Gateway, make_settings
from sublane_sim import Provider, SimAccount, Simulator


@dataclass
class Pool:
    """A gateway whose default group holds simulator accounts, and the admin's key for it
    (admins are bound by no member limit, TEAM-1: :meth:`member_key` makes a member's)."""

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

    def member_key(self, username: str, **fields: Any) -> tuple[dict[str, Any], str]:
        """A new member of the default group and a key of theirs for it: ``(user, secret)``."""
        user = self.gateway.add_member(self.admin, username, **fields)
        response = self.admin.post(f"/api/users/{user['id']}/keys", json={"name": "member", "group_id": 1})
        assert response.status_code == 201, response.text
        return user, response.json()["secret"]

    def add_account(self, provider: Provider, name: str) -> int:
        """Import one more simulator account of ``provider`` into the default group; its id."""
        account = self.sim.create_account(provider)
        body = {"provider": provider, "name": name, "credentials": account.credentials, "group_ids": [1]}
        response = self.admin.post("/api/accounts/import", json=body)
        assert response.status_code == 201, response.text
        account_id: int = response.json()["id"]
        self.sim_accounts.append(account)
        self.account_ids.append(account_id)
        self.settle()
        return account_id

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until the work management changes started in the background has ended (the
        catalogue read after an import, CAT-1), as a deployment is a moment after its set-up."""
        import time

        deadline = time.monotonic() + timeout_s
        while self.runtime.background_work:
            assert time.monotonic() < deadline, "background work did not end"
            time.sleep(0.005)

    def sim_account_of(self, account_id: int) -> SimAccount:
        return self.sim_accounts[self.account_ids.index(account_id)]

    @property
    def runtime(self) -> Any:
        return self.gateway.app.state.client


def settings_for(sim: Simulator, data_dir: Path, **overrides: Any) -> Settings:
    urls = {name[len("SUBLANE_") :].lower(): value for name, value in sim.env().items()}
    backend = backend_settings(data_dir) if "database_url" not in overrides else {}  # SUBLANE_TEST_BACKEND
    return make_settings(data_dir, **{**urls, **backend, **overrides})


def store_catalogue(gateway: Gateway, account_ids: list[int], models: list[str]) -> None:
    """Store ``models`` as the accounts' catalogues, discovered now (CAT-1), as a restart after a
    good discovery finds them; read before the gateway's first call."""
    from sqlmodel import Session

    from sublane_core import AccountModels

    now = gateway.app.state.client.clock.time()
    with Session(gateway.engine) as db:
        for account_id in account_ids:
            db.merge(AccountModels(account_id=account_id, models=models, served=models, discovered_at=now))
        db.commit()


def seed_catalogue(pool: Pool, models: list[str]) -> None:
    """:func:`store_catalogue` for every pool account."""
    store_catalogue(pool.gateway, pool.account_ids, models)


def recorded(pool: Pool, count: int) -> list[dict[str, Any]]:
    """The admin's request history once it holds ``count`` records (written in the background),
    newest first; fails when it holds another number after 10 s."""
    import time

    deadline = time.monotonic() + 10
    while True:
        items: list[dict[str, Any]] = pool.admin.get("/api/requests").json()["items"]
        if len(items) >= count or time.monotonic() > deadline:
            assert len(items) == count, items
            return items
        time.sleep(0.05)
