"""The database engine: SQLite in WAL mode with a busy timeout, foreign keys on; or PostgreSQL
(SCALE-1) through psycopg 3, whatever driver a ``postgresql://`` URL would otherwise pick."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import ConnectionPoolEntry

SQLITE_BUSY_TIMEOUT_MS = 5000


def create_db_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and the pragmas SubLane relies on."""
    parsed = postgres_url(sa.make_url(url))
    if parsed.get_backend_name() != "sqlite":
        return sa.create_engine(parsed, pool_pre_ping=True, hide_parameters=True)
    if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
        _private_file(Path(parsed.database))
    engine = sa.create_engine(
        url,
        # A failed statement's message must not carry its parameters (key digests, hints): STORE-4.
        hide_parameters=True,
        # Each thread gets its own connection from the pool; FastAPI runs sync handlers in threads.
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )
    event.listen(engine, "connect", _on_sqlite_connect)
    return engine


def _private_file(database: Path) -> None:
    """The database's folder (0700) and, when absent, an empty database file of mode 0600 (OPS-7).

    SQLite would create the file with 0644 (less the umask), and its ``-wal`` and ``-shm`` files
    take the database file's mode: made here first, none of them is ever readable by others, and a
    fresh start has nothing to tighten. An empty file is a new database to SQLite."""
    database.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def postgres_url(url: sa.URL) -> sa.URL:
    """``postgresql://`` and ``postgres://`` (as PostgreSQL's own tools write them) mean psycopg 3:
    SQLAlchemy would otherwise look for psycopg2, which SubLane does not install."""
    if url.drivername in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    return url


def is_sqlite(url: str) -> bool:
    """Whether ``url`` is an SQLite database (the embedded default)."""
    return sa.make_url(url).get_backend_name() == "sqlite"


def _on_sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")  # safe with WAL; fsync at checkpoints
    finally:
        cursor.close()
