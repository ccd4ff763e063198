"""A group's metered routing (PAID-2): ``resource_groups.metered`` and ``overflow_after_s``.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("resource_groups") as batch:
        batch.add_column(
            sa.Column("metered", sa.String(length=16), nullable=False, server_default="overflow")
        )
        batch.add_column(sa.Column("overflow_after_s", sa.Float(), nullable=False, server_default="5"))


def downgrade() -> None:
    with op.batch_alter_table("resource_groups") as batch:
        batch.drop_column("overflow_after_s")
        batch.drop_column("metered")
