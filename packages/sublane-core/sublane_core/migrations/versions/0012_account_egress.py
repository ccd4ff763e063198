"""Each account's own egress proxy, sealed like its credentials, and shown with its password as
``***`` (EGRESS-1).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("proxy_url", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("proxy_shown", sa.String(length=2048), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("proxy_shown")
        batch.drop_column("proxy_url")
