"""``sublane import-sqlite PATH`` (SCALE-1): an SQLite data folder copied into an empty PostgreSQL.

Every persistent table moves — accounts and their credentials, users, keys, groups and bindings,
cooldowns, affinity, quota, history, usage and the audit log — in one transaction, in the order the
foreign keys need, with each table's id sequence moved past the copied ids. Sign-in sessions do not
move (members sign in again). The source is opened read-only and must be at the schema this SubLane
knows (``SUBLANE_DATA_DIR=PATH sublane migrate`` upgrades it). The target is created by the same
migrations and must be empty: a database that already holds anything is refused, nothing written.

Sealed values (every column the schema marks ``SEALED``: credentials, proxy URLs, TOTP secrets,
webhook secrets, the key check, SCALE-8) are sealed with the source folder's ``credentials.key``;
when the target's key (``SUBLANE_CREDENTIALS_KEY``, or its own ``credentials.key``) is another, each
is opened with the one and sealed with the other on the way, so the copy opens with the key the
PostgreSQL replicas use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from sublane_core import (
    CredentialCipher,
    Settings,
    create_db_engine,
    current_revision,
    head_revision,
    is_sqlite,
    load_or_create_key,
    reseal_rows,
    upgrade_database,
)
from sublane_gateway._credential_key import credentials_key

#: Tables that do not move: sign-in sessions belong to the installation they were made on.
NOT_COPIED = frozenset({"web_sessions"})
BATCH = 1000


class ImportRefused(Exception):
    """The import cannot be done; the message says why and what to do. Nothing was written."""


def _copied_tables() -> list[sa.Table]:
    return [table for table in SQLModel.metadata.sorted_tables if table.name not in NOT_COPIED]


def _batches(rows: sa.CursorResult[Any]) -> Iterator[list[dict[str, Any]]]:
    while batch := rows.mappings().fetchmany(BATCH):
        yield [dict(row) for row in batch]


def _holds_anything(connection: Connection) -> str | None:
    for table in [*_copied_tables(), SQLModel.metadata.tables["web_sessions"]]:
        if connection.execute(sa.select(sa.literal(1)).select_from(table).limit(1)).first() is not None:
            return table.name
    return None


def _move_sequences_past(connection: Connection, table: sa.Table) -> None:
    """PostgreSQL's id sequence of ``table`` continues after the ids copied into it."""
    if "id" not in table.c or not isinstance(table.c.id.type, sa.Integer):
        return
    connection.execute(
        sa.text(
            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "  # noqa: S608 (our own table names)
            f"(SELECT MAX(id) FROM {table.name}), true) WHERE EXISTS (SELECT 1 FROM {table.name})"
        )
    )


def import_sqlite(settings: Settings, source_dir: Path) -> dict[str, int]:
    """Copy the SQLite data folder ``source_dir`` into the configured (empty) PostgreSQL database;
    rows copied per table."""
    target_url = settings.effective_database_url
    if is_sqlite(target_url):
        raise ImportRefused("import-sqlite copies into PostgreSQL: set SUBLANE_DATABASE_URL=postgresql://…")
    database = source_dir / "sublane.db"
    if not database.is_file():
        raise ImportRefused(
            f"{source_dir} holds no sublane.db: give the data folder of an SQLite installation"
        )
    source_key = load_or_create_key(source_dir / "credentials.key", create=False)
    source = sa.create_engine(f"sqlite:///file:{database.as_posix()}?mode=ro&uri=true")
    target = create_db_engine(target_url)
    try:
        at = current_revision(source)
        if at != head_revision():
            raise ImportRefused(
                f"{database} is at schema {at or 'nothing'}, this SubLane needs {head_revision()}: "
                f"upgrade it first (SUBLANE_DATA_DIR={source_dir} sublane migrate)"
            )
        upgrade_database(target)  # an empty database gets the schema; a migrated one is kept as it is
        source_cipher = CredentialCipher(source_key)
        target_key = credentials_key(settings, target)  # SUBLANE_CREDENTIALS_KEY or its key file
        target_cipher = CredentialCipher(target_key)
        reseal = target_key != source_key
        copied: dict[str, int] = {}
        with source.connect() as reading, target.begin() as writing:
            occupied = _holds_anything(writing)
            if occupied is not None:
                raise ImportRefused(
                    f"the target database is not empty (its table {occupied} holds rows): "
                    "import-sqlite only fills an empty database"
                )
            for table in _copied_tables():
                count = 0
                for rows in _batches(reading.execute(sa.select(table))):
                    if reseal:
                        reseal_rows(table.name, rows, source_cipher, target_cipher)
                    writing.execute(sa.insert(table), rows)
                    count += len(rows)
                copied[table.name] = count
                _move_sequences_past(writing, table)
        return copied
    finally:
        source.dispose()
        target.dispose()
