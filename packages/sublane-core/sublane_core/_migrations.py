"""Schema creation and upgrades, only through Alembic (STORE-1)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

_SCRIPT_LOCATION = Path(__file__).with_name("migrations")


def alembic_config(engine: Engine) -> Config:
    """An Alembic configuration bound to ``engine`` (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(_SCRIPT_LOCATION))
    config.attributes["engine"] = engine
    return config


def upgrade_database(engine: Engine, revision: str = "head") -> None:
    """Create or upgrade the schema to ``revision``."""
    command.upgrade(alembic_config(engine), revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or ``None`` for an empty database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def known_revisions() -> frozenset[str]:
    """Every revision this code knows: a database at any other revision is from a newer SubLane."""
    return frozenset(script.revision for script in ScriptDirectory(str(_SCRIPT_LOCATION)).walk_revisions())


def head_revision() -> str:
    """The newest revision this code knows."""
    head = ScriptDirectory(str(_SCRIPT_LOCATION)).get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise RuntimeError("no migrations found")
    return head
