"""Fixtures of the history tests: a real, migrated SQLite file with people, keys and accounts."""

from __future__ import annotations

import itertools
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from sublane_core import (
    Account,
    ApiKey,
    FakeClock,
    ResourceGroup,
    User,
    create_db_engine,
    new_request_id,
    signals,
    upgrade_database,
)

# The helpers of these tests live beside them; pytest runs with --import-mode=importlib, so their
# folder is not on sys.path by itself. The module name is unique to this package's tests.
sys.path.insert(0, str(Path(__file__).parent))

from history_harness import HistoryDb

ROUTING = {"rule": "uniform_rotation", "candidates": 2, "excluded": {"cooldown": 1}}


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history-template") / "sublane.db"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade_database(engine)
    now = 1_700_000_000.0
    with Session(engine) as db:
        db.add(ResourceGroup(name="default", created_at=now, updated_at=now))
        for name, role in (("admin", "admin"), ("bob", "member"), ("carol", "member")):
            db.add(User(username=name, password_hash="x", role=role, created_at=now, updated_at=now))
        db.commit()
        for user_id, name in ((1, "admin-key"), (2, "bob-laptop"), (3, "carol-ci")):
            db.add(
                ApiKey(
                    user_id=user_id,
                    group_id=1,
                    name=name,
                    digest=f"{user_id:064d}",
                    hint="sl_…",
                    created_at=now,
                )
            )
        for name in ("plus-1", "pro-2"):
            db.add(
                Account(provider="codex", name=name, credentials=b"sealed", created_at=now, updated_at=now)
            )
        db.commit()
    engine.dispose()
    return path


@pytest.fixture
def history_db(migrated_template: Path, tmp_path: Path) -> Iterator[HistoryDb]:
    path = tmp_path / "sublane.db"
    shutil.copy(migrated_template, path)
    engine = create_db_engine(f"sqlite:///{path}")
    yield HistoryDb(engine, FakeClock(), path)
    engine.dispose()


@pytest.fixture
def make_payload(history_db: HistoryDb) -> Callable[..., signals.RequestFinished]:
    """``make_payload(**fields)``: a finished attempt of user 2 (bob) on account 1, started now."""
    counter = itertools.count(1)

    def factory(**overrides: Any) -> signals.RequestFinished:
        started = overrides.pop("started_at", history_db.clock.time() - 0.001 * next(counter))
        fields: dict[str, Any] = {
            "request_id": new_request_id(started),
            "started_at": started,
            "duration_ms": 120,
            "first_token_ms": 40,
            "user_id": 2,
            "key_id": 2,
            "group_id": 1,
            "account_id": 1,
            "provider": "codex",
            "model": "gpt-5-codex",
            "protocol": "responses",
            "operation": "responses",
            "outcome": "success",
            "upstream_status": 200,
            "input_tokens": 1000,
            "output_tokens": 50,
            "cached_tokens": 875,
            "routing": ROUTING,
        }
        fields.update(overrides)
        return signals.RequestFinished(**fields)

    return factory
