"""COST-4: why a turn missed the prompt cache (on each record) and the token-weighted hit rate in
the usage summaries (per member, model and day in ``usage_days``; per account in
``usage_cache_accounts``).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("request_records") as batch:
        batch.add_column(sa.Column("cache_miss_reason", sa.String(length=16), nullable=True))
    with op.batch_alter_table("usage_days") as batch:
        batch.add_column(sa.Column("hit_input_tokens", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("hit_cached_tokens", sa.BigInteger(), nullable=True))
    op.create_table(
        "usage_cache_accounts",
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("hit_input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("hit_cached_tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "user_id", "account_id"),
    )


def downgrade() -> None:
    op.drop_table("usage_cache_accounts")
    with op.batch_alter_table("usage_days") as batch:
        batch.drop_column("hit_cached_tokens")
        batch.drop_column("hit_input_tokens")
    with op.batch_alter_table("request_records") as batch:
        batch.drop_column("cache_miss_reason")
