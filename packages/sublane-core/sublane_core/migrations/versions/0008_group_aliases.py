"""Model aliases per group, and the model an alias was served as (ALIAS-1).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "group_aliases",
        sa.Column(
            "group_id",
            sa.Integer(),
            sa.ForeignKey("resource_groups.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("alias", sa.String(length=128), primary_key=True),
        sa.Column("model", sa.String(length=128), nullable=False),
    )
    with op.batch_alter_table("request_records") as batch:
        batch.add_column(sa.Column("served_model", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("request_records") as batch:
        batch.drop_column("served_model")
    op.drop_table("group_aliases")
