from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

from sublane_core import create_db_engine, current_revision, head_revision, known_revisions, upgrade_database


def test_store_1_migrations_create_the_schema_from_empty(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path}/nested/sublane.db")
    assert current_revision(engine) is None
    upgrade_database(engine)
    assert current_revision(engine) == head_revision()
    tables = set(sa.inspect(engine).get_table_names())
    assert {
        "users",
        "web_sessions",
        "api_keys",
        "resource_groups",
        "group_members",
        "group_accounts",
        "accounts",
        "account_cooldowns",
        "affinity",
        "quota_observations",
        "request_records",
        "audit_log",
    } <= tables
    upgrade_database(engine)  # a second run is a no-op
    engine.dispose()


def test_store_1_migrated_schema_matches_models(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path}/sublane.db")
    upgrade_database(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []
    engine.dispose()


def test_store_1_sqlite_runs_in_wal_mode_with_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path}/sublane.db")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_request_record_ids_are_autoincrement_so_never_reused(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path}/sublane.db")
    upgrade_database(engine)
    with engine.connect() as connection:
        ddl = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'request_records'"
        ).scalar_one()
    assert "AUTOINCREMENT" in ddl.upper()
    engine.dispose()


def test_ops_9_known_revisions_tell_a_newer_schema_apart(tmp_path: Path) -> None:
    known = known_revisions()
    assert {"0001", head_revision()} <= known
    assert "9999" not in known  # what `sublane restore` refuses: a schema from a newer SubLane


def test_ops_10_audit_ids_are_autoincrement_so_cursors_never_repeat(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path}/sublane.db")
    upgrade_database(engine)
    with engine.connect() as connection:
        ddl = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'audit_log'"
        ).scalar_one()
    assert "AUTOINCREMENT" in ddl.upper()
    engine.dispose()


def test_store_1_revisions_read_without_alembic_match_alembics_own(tmp_path: Path) -> None:
    """Issue #49: the head, the known revisions and the database's revision are read without
    importing Alembic; they are what Alembic itself says, at every step of the chain."""
    from alembic.script import ScriptDirectory

    import sublane_core

    scripts = ScriptDirectory(str(Path(sublane_core.__file__).with_name("migrations")))
    assert head_revision() == scripts.get_current_head()
    assert known_revisions() == {script.revision for script in scripts.walk_revisions()}
    engine = create_db_engine(f"sqlite:///{tmp_path}/sublane.db")
    for script in reversed(list(scripts.walk_revisions())):
        upgrade_database(engine, script.revision)
        with engine.connect() as connection:
            assert current_revision(engine) == MigrationContext.configure(connection).get_current_revision()
        assert current_revision(engine) == script.revision
    engine.dispose()
