"""Fixtures of the scheduler's tests: a fake clock and a small workspace over a real SQLite file."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sublane_core import FakeClock, create_db_engine, upgrade_database

# The helpers of these tests live beside them; pytest runs with --import-mode=importlib, so their
# folder is not on sys.path by itself. The module name is unique to this package's tests.
sys.path.insert(0, str(Path(__file__).parent))

from scheduler_harness import Workspace


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated database file, copied for each test (migrating takes longer than a test)."""
    path = tmp_path_factory.mktemp("template") / "sublane.db"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade_database(engine)
    engine.dispose()
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def workspace(migrated_db: Path, tmp_path: Path, clock: FakeClock) -> Iterator[Workspace]:
    path = tmp_path / "sublane.db"
    shutil.copyfile(migrated_db, path)
    engine = create_db_engine(f"sqlite:///{path}")
    yield Workspace(engine, clock)
    engine.dispose()
