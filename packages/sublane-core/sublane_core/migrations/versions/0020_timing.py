"""Where a request's time went (OPS-13): ``request_records.timing``.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_records") as batch:
        batch.add_column(sa.Column("timing", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_records") as batch:
        batch.drop_column("timing")
