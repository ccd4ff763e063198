"""Fixtures of the quota observer's tests: a fake clock and a real, migrated SQLite file with accounts."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from sublane_core import Account, FakeClock, create_db_engine, upgrade_database

# The helpers of these tests live beside them; pytest runs with --import-mode=importlib, so their
# folder is not on sys.path by itself. The module name is unique to this package's tests.
sys.path.insert(0, str(Path(__file__).parent))


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
def engine(migrated_db: Path, tmp_path: Path, clock: FakeClock) -> Iterator[Engine]:
    """A database with three accounts (ids 1–3: codex, claude, antigravity), lifecycle revision 1."""
    path = tmp_path / "sublane.db"
    shutil.copyfile(migrated_db, path)
    engine = create_db_engine(f"sqlite:///{path}")
    now = clock.time()
    with Session(engine) as db:
        for provider in ("codex", "claude", "antigravity"):
            db.add(
                Account(
                    provider=provider, name=provider, credentials=b"sealed", created_at=now, updated_at=now
                )
            )
        db.commit()
    yield engine
    engine.dispose()
