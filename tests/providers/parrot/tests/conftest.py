"""The parrot upstream served for real on loopback, and a gateway with parrot accounts in its pool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sublane_gateway.testing import make_settings, running_gateway, serve_in_thread
from sublane_provider_parrot.testing import ParrotPool, ParrotUpstream


@pytest.fixture(scope="session")
def parrot_server() -> Iterator[tuple[ParrotUpstream, str]]:
    """One parrot upstream per test process: ``(its state, its base URL)``."""
    upstream = ParrotUpstream()
    with serve_in_thread(upstream.app) as url:
        yield upstream, url


@pytest.fixture
def parrot_pool(parrot_server: tuple[ParrotUpstream, str], tmp_path: Path) -> Iterator[ParrotPool]:
    """A gateway with two parrot accounts in its default group (and nothing else)."""
    upstream, url = parrot_server
    with running_gateway(make_settings(tmp_path / "data", parrot_base_url=url)) as gateway:
        admin = gateway.admin()
        accounts = [upstream.new_account() for _ in range(2)]
        ids = []
        for number, account in enumerate(accounts, 1):
            body = {
                "provider": "parrot",
                "name": f"parrot-{number}",
                "credentials": account.credentials,
                "group_ids": [1],
            }
            response = admin.post("/api/accounts/import", json=body)
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])
        key = admin.post("/api/users/1/keys", json={"name": "parrot", "group_id": 1}).json()["secret"]
        pool = ParrotPool(gateway, upstream, admin, key, accounts, ids)
        pool.settle()
        yield pool
