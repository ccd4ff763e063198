"""Cost (COST-1, 2, 3, 5): admins' model prices, each record's cost and cache writes, cost in the
usage summaries (by member and by account), subscription prices, and budget rules in dollars.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_prices",
        sa.Column("model", sa.String(length=128), primary_key=True),
        sa.Column("input", sa.Float(), nullable=False),
        sa.Column("cached_input", sa.Float(), nullable=True),
        sa.Column("cache_write_5m", sa.Float(), nullable=True),
        sa.Column("cache_write_1h", sa.Float(), nullable=True),
        sa.Column("output", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "usage_account_days",
        sa.Column("day", sa.Integer(), primary_key=True),
        sa.Column("account_id", sa.Integer(), primary_key=True),
        sa.Column("provider", sa.String(length=16), primary_key=True),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=True),
        sa.Column("output_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("unpriced_tokens", sa.BigInteger(), nullable=False),
    )
    with op.batch_alter_table("request_records") as batch:
        batch.add_column(sa.Column("cache_write_tokens", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("cost_usd", sa.Float(), nullable=True))
    with op.batch_alter_table("usage_days") as batch:
        batch.add_column(sa.Column("cost_usd", sa.Float(), nullable=True))
        batch.add_column(sa.Column("unpriced_tokens", sa.BigInteger(), nullable=False, server_default="0"))
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("monthly_price_usd", sa.Float(), nullable=True))
    with op.batch_alter_table("token_budgets") as batch:
        batch.add_column(sa.Column("unit", sa.String(length=8), nullable=False, server_default="tokens"))
        batch.add_column(sa.Column("usd_limit", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("token_budgets") as batch:
        batch.drop_column("usd_limit")
        batch.drop_column("unit")
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("monthly_price_usd")
    with op.batch_alter_table("usage_days") as batch:
        batch.drop_column("unpriced_tokens")
        batch.drop_column("cost_usd")
    with op.batch_alter_table("request_records") as batch:
        batch.drop_column("cost_usd")
        batch.drop_column("cache_write_tokens")
    op.drop_table("usage_account_days")
    op.drop_table("model_prices")
