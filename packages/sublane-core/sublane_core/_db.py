"""The database engine: SQLite in WAL mode with a busy timeout, foreign keys on; or PostgreSQL
(SCALE-1) through psycopg 3, whatever driver a ``postgresql://`` URL would otherwise pick."""

from __future__ import annotations

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
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    engine = sa.create_engine(
        url,
        # A failed statement's message must not carry its parameters (key digests, hints): STORE-4.
        hide_parameters=True,
        # Each thread gets its own connection from the pool; FastAPI runs sync handlers in threads.
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )
    event.listen(engine, "connect", _on_sqlite_connect)
    return engine


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
