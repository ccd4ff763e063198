"""Team controls: usage summaries (daily and hourly buckets) and token budget rules (TEAM-3, TEAM-4).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "usage_days",
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("success", sa.Integer(), nullable=False),
        sa.Column("incomplete", sa.Integer(), nullable=False),
        sa.Column("error", sa.Integer(), nullable=False),
        sa.Column("canceled", sa.Integer(), nullable=False),
        sa.Column("rejected", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=True),
        sa.Column("output_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=True),
        sa.Column("unknown_usage_requests", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "day", "user_id", "group_id", "provider", "model", name=op.f("pk_usage_days")
        ),
    )
    op.create_index("ix_usage_days_user_id_day", "usage_days", ["user_id", "day"], unique=False)
    op.create_table(
        "usage_hours",
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("hour", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("day", "hour", "user_id", name=op.f("pk_usage_hours")),
    )
    op.create_table(
        "token_budgets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(length=128), nullable=True),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("token_limit", sa.BigInteger(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["resource_groups.id"],
            name=op.f("fk_token_budgets_group_id_resource_groups"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_token_budgets_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_token_budgets")),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_token_budgets_user_id"), "token_budgets", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_token_budgets_user_id"), table_name="token_budgets")
    op.drop_table("token_budgets")
    op.drop_table("usage_hours")
    op.drop_index("ix_usage_days_user_id_day", table_name="usage_days")
    op.drop_table("usage_days")
