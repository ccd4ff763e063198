"""Alerts across replicas (ALERT-6): ``alert_marks`` holds when an event told at most once per
period (``pool.unavailable`` per group and model) was last raised, so every replica checks and sets
it in one conditional write. Deliveries themselves are claimed through ``next_attempt_at`` (a
lease), which needs no new column.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert_marks",
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("raised_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    op.drop_table("alert_marks")
