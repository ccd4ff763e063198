"""Client versions per provider (CLIENT-2): the newest native client version seen in a successful
model call, when it was last seen, and the admin's pin; shared by every replica.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "client_versions",
        sa.Column("provider", sa.String(length=64), nullable=False),
        sa.Column("seen_version", sa.String(length=17), nullable=True),
        sa.Column("seen_at", sa.Float(), nullable=True),
        sa.Column("pinned_version", sa.String(length=17), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("provider", name=op.f("pk_client_versions")),
    )


def downgrade() -> None:
    op.drop_table("client_versions")
