"""Spend caps on metered use (PAID-3): a group's and a member's ``metered_monthly_usd`` and the
monthly spend ledger ``metered_spend``.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("resource_groups") as batch:
        batch.add_column(sa.Column("metered_monthly_usd", sa.Float(), nullable=True))
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("metered_monthly_usd", sa.Float(), nullable=True))
    op.create_table(
        "metered_spend",
        sa.Column("month", sa.Integer(), primary_key=True),
        sa.Column("group_id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), primary_key=True),
        sa.Column("usd", sa.Float(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("uncosted", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("metered_spend")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("metered_monthly_usd")
    with op.batch_alter_table("resource_groups") as batch:
        batch.drop_column("metered_monthly_usd")
