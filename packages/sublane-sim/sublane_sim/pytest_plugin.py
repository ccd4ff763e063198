"""pytest plugin (auto-loaded through the `pytest11` entry point): the `sim` fixture.

One simulator server runs per test session on an ephemeral loopback port; `sim` resets it before
each test, so every test starts with no accounts, empty logs and a real-time clock.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._simulator import Simulator

__all__ = ["sim", "sublane_sim_server"]


@pytest.fixture(scope="session")
def sublane_sim_server() -> Iterator[Simulator]:
    """The session's running simulator (prefer `sim`, which also resets it)."""
    simulator = Simulator(seed=0)
    simulator.start("127.0.0.1", 0)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture
def sim(sublane_sim_server: Simulator) -> Iterator[Simulator]:
    """A freshly reset, running simulator: URLs (`base_url`, `codex_base_url`, …, `env()`) and
    the whole Python control API."""
    sublane_sim_server.reset()
    yield sublane_sim_server
    sublane_sim_server.reset()
