"""What upstreams answered that SubLane does not know (CLIENT-7): one row per provider, kind and
name, shared by the replicas.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "upstream_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("first_seen", sa.Float(), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("example_request_id", sa.String(length=64), nullable=True),
        sa.Column("logged_day", sa.Integer(), nullable=True),
        sa.UniqueConstraint("provider", "kind", "name", name="uq_upstream_changes_provider_kind_name"),
    )


def downgrade() -> None:
    op.drop_table("upstream_changes")
