"""TOTP as a second sign-in factor (AUTH-1).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("totp_enabled", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("totp_secret", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("totp_pending", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("totp_last_step", sa.Integer(), nullable=True))
    op.create_table(
        "totp_recovery_codes",
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("digest", sa.String(length=64), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("totp_recovery_codes")
    with op.batch_alter_table("users") as batch:
        for column in ("totp_last_step", "totp_pending", "totp_secret", "totp_enabled"):
            batch.drop_column(column)
