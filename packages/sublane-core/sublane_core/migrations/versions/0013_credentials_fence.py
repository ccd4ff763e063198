"""The fencing token of the last credential refresh stored (SCALE-2): replicas refresh one at a
time under a Redis lock whose every holder has a larger token, and a write carrying an older token
than the stored one is refused, so a replica that stalled past its lock never overwrites newer
credentials.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("credentials_fence", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("credentials_fence")
