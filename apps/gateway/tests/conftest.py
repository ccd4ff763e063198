"""Fixtures: a real gateway on loopback over a real SQLite file, and signed-in HTTP clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sublane_gateway.testing import Gateway, make_settings, running_gateway


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def gateway(data_dir: Path) -> Iterator[Gateway]:
    """A gateway with a bootstrap admin (``admin``/``admin-pass-1``) on a fresh database."""
    with running_gateway(make_settings(data_dir)) as running:
        yield running


@pytest.fixture
def admin(gateway: Gateway) -> httpx.Client:
    """An HTTP client signed in as the bootstrap admin."""
    return gateway.admin()
