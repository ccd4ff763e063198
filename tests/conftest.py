"""Cross-package fixtures: a real gateway wired to the real upstream simulator."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from gateway_pool import Pool, settings_for

from sublane_core import signals
from sublane_gateway.testing import running_gateway
from sublane_sim import Simulator


@pytest.fixture
def make_pool(sim: Simulator, tmp_path: Path) -> Iterator[Callable[..., Pool]]:
    """``make_pool(accounts=1, provider="codex", account_options={}, **settings)`` → a wired :class:`Pool`."""
    counter = itertools.count(1)
    with ExitStack() as stack:

        def factory(
            accounts: int = 1,
            provider: str = "codex",
            account_options: dict[str, Any] | None = None,
            **settings: Any,
        ) -> Pool:
            data_dir = tmp_path / f"data{next(counter)}"
            gateway = stack.enter_context(running_gateway(settings_for(sim, data_dir, **settings)))
            admin = gateway.admin()
            sim_accounts = [sim.create_account(provider, **(account_options or {})) for _ in range(accounts)]
            account_ids = []
            for index, account in enumerate(sim_accounts):
                response = admin.post(
                    "/api/accounts/import",
                    json={
                        "provider": provider,
                        "name": f"{provider}-{index + 1}",
                        "credentials": account.credentials,
                        "group_ids": [1],
                    },
                )
                assert response.status_code == 201, response.text
                account_ids.append(response.json()["id"])
            key = admin.post("/api/users/1/keys", json={"name": "pool", "group_id": 1}).json()["secret"]
            pool = Pool(gateway, sim, admin, key, sim_accounts, account_ids)
            pool.settle()  # the catalogue reads that follow the imports (CAT-1) are over
            # this gateway's calls only: a runtime sends its events with itself as sender
            stack.callback(signals.request_finished.connect(pool.finished.append, sender=pool.runtime))
            return pool

        yield factory
