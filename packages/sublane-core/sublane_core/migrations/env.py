"""Alembic environment: runs against the engine handed over in ``config.attributes``."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from sublane_core import _schema  # noqa: F401  (registers the tables on the metadata)

config = context.config
engine = config.attributes.get("engine")
if not isinstance(engine, Engine):
    raise RuntimeError("run migrations through sublane_core.upgrade_database(engine)")

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode rebuilds tables
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
