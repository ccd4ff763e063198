"""A member's tokens per group and UTC hour (POOL-1): the share of a group's recent tokens comes
from this usage summary, not from request records (which history may not keep).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "usage_group_hours",
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("hour", "group_id", "user_id", name=op.f("pk_usage_group_hours")),
    )


def downgrade() -> None:
    op.drop_table("usage_group_hours")
