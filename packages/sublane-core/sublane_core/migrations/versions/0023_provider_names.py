"""Provider names up to 32 characters (PAID-1: ``openai-compatible`` has 17): the ``provider``
columns of ``accounts``, ``request_records``, ``usage_days`` and ``usage_account_days``.

SQLite enforces no ``VARCHAR`` length, and changing a column there means rebuilding the table — for
``accounts`` a drop that cascades to the rows of other tables: only PostgreSQL's columns change (the
schema declares SQLite's as they were, ``sublane_core._schema.PROVIDER_NAME``).

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_TABLES = ("accounts", "request_records", "usage_days", "usage_account_days")


def _enforces_lengths() -> bool:
    return op.get_bind().dialect.name != "sqlite"


def upgrade() -> None:
    if not _enforces_lengths():
        return
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column("provider", type_=sa.String(length=32), existing_type=sa.String(length=16))


def downgrade() -> None:
    if not _enforces_lengths():
        return
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column("provider", type_=sa.String(length=16), existing_type=sa.String(length=32))
