"""Stored model catalogues per account (CAT-1).

Revision ID: 0006
Revises: 0005_quota
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005_quota"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "account_models",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("models", sa.JSON(), nullable=False),
        sa.Column("served", sa.JSON(), nullable=False),
        sa.Column("discovered_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_account_models_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_account_models")),
    )


def downgrade() -> None:
    op.drop_table("account_models")
