"""Schema creation and upgrades, only through Alembic (STORE-1).

Alembic (with Mako and what it pulls in) is imported only when a schema is created or upgraded:
a gateway whose database is already at the head never loads it (about 10 MB of a serving
process's memory, issue #49). Which revision the database is at is read from Alembic's version
table (``alembic_version.version_num``, Alembic's default), and which revisions this code knows
from the ``revision``/``down_revision`` assignments of the shipped migration files, read with
``ast`` (``tests`` check both against Alembic's own answers).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPT_LOCATION = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"  # Alembic's default version table, with one ``version_num`` column


def alembic_config(engine: Engine) -> Config:
    """An Alembic configuration bound to ``engine`` (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_SCRIPT_LOCATION))
    config.attributes["engine"] = engine
    return config


def upgrade_database(engine: Engine, revision: str = "head") -> None:
    """Create or upgrade the schema to ``revision``."""
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or ``None`` for an empty database."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table(VERSION_TABLE):
            return None
        version = sa.table(VERSION_TABLE, sa.column("version_num"))
        rows = connection.execute(sa.select(version.c.version_num)).scalars().all()
    if len(rows) > 1:  # pragma: no cover - SubLane's migrations are one line, never branches
        raise RuntimeError(f"the database is at several revisions: {sorted(rows)}")
    return str(rows[0]) if rows else None


@cache
def _revision_links() -> dict[str, str | None]:
    """Each shipped revision and the one it revises (``None`` for the first)."""
    links: dict[str, str | None] = {}
    for path in sorted((_SCRIPT_LOCATION / "versions").glob("*.py")):
        values: dict[str, object] = {}
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        values[target.id] = node.value.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(node.value, ast.Constant)
            ):
                values[node.target.id] = node.value.value
        revision, down = values.get("revision"), values.get("down_revision")
        if isinstance(revision, str):
            links[revision] = down if isinstance(down, str) else None
    return links


def known_revisions() -> frozenset[str]:
    """Every revision this code knows: a database at any other revision is from a newer SubLane."""
    return frozenset(_revision_links())


def head_revision() -> str:
    """The newest revision this code knows."""
    links = _revision_links()
    heads = set(links) - {down for down in links.values() if down is not None}
    if len(heads) != 1:  # pragma: no cover - the package always ships one line of migrations
        raise RuntimeError(f"the migrations have {len(heads)} heads: {sorted(heads)}")
    return heads.pop()


def upgrade_configured_database() -> None:
    """Create or upgrade the database the environment's settings name, saying so on stderr when it
    changed (``sublane migrate``'s message): what ``sublane serve`` runs in a child process, which
    loads only the core and Alembic."""
    import sys

    from sublane_core._db import create_db_engine
    from sublane_core._settings import Settings

    engine = create_db_engine(Settings().effective_database_url)
    try:
        before = current_revision(engine)
        upgrade_database(engine)
        after = head_revision()
    finally:
        engine.dispose()
    if before != after:
        print(f"sublane: database upgraded from {before or 'empty'} to {after}", file=sys.stderr)
