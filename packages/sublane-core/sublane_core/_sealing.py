"""Every value sealed with the credential key, found from the schema's marks (SCALE-8).

A column whose ``info`` is :data:`~sublane_core._schema.SEALED` holds values made by
``CredentialCipher.encrypt``: account credentials and proxy URLs, TOTP secrets, webhook secrets,
the key check — and any column marked later. Whatever moves a database to another key uses these
functions, so a new sealed column is re-sealed everywhere the day it is marked, not forgotten in
one of the places that change the key (``import-sqlite``, ``restore`` under another key).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from sublane_core._crypto import CredentialCipher

_BATCH = 500


def sealed_columns(metadata: sa.MetaData | None = None) -> dict[str, tuple[str, ...]]:
    """Table name → the names of its columns marked sealed, for every table that has one."""
    found: dict[str, tuple[str, ...]] = {}
    for table in (metadata or SQLModel.metadata).sorted_tables:
        names = tuple(column.name for column in table.columns if column.info.get("sealed") is True)
        if names:
            found[table.name] = names
    return found


def reseal_rows(
    table: str, rows: Iterable[dict[str, Any]], source: CredentialCipher, target: CredentialCipher
) -> None:
    """Open each sealed value of ``rows`` (dicts of one ``table``'s columns) with ``source`` and seal
    it again with ``target``, in place. A value that does not open raises ``CredentialDecryptError``."""
    columns = sealed_columns().get(table, ())
    for row in rows:
        for column in columns:
            value = row.get(column)
            if value is not None:
                row[column] = target.encrypt(source.decrypt(bytes(value)))


def reseal_database(connection: Connection, source: CredentialCipher, target: CredentialCipher) -> int:
    """Re-seal every marked column of the database ``connection`` reaches, in its transaction;
    the number of values re-sealed. Tables are read by primary key, in batches."""
    changed = 0
    for name, columns in sealed_columns().items():
        table = SQLModel.metadata.tables[name]
        keys = list(table.primary_key.columns)
        rows = [
            dict(row)
            for row in connection.execute(sa.select(*keys, *(table.c[c] for c in columns))).mappings()
        ]
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            reseal_rows(name, batch, source, target)
            for row in batch:
                values = {column: row[column] for column in columns if row[column] is not None}
                if not values:
                    continue
                where = sa.and_(*(key == row[key.name] for key in keys))
                connection.execute(sa.update(table).where(where).values(values))
                changed += len(values)
    return changed
