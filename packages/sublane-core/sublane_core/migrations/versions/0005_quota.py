"""Quota and auto-review parents: who made a conversation's binding (REVIEW-1).

A Codex auto-review request may prefer its parent conversation's account, but only when that
conversation belongs to the same user (the digest already holds the group). Older bindings have
no owner and are never offered as parents.

Revision ID: 0005_quota
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_quota"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("affinity") as batch:
        batch.add_column(sa.Column("user_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("affinity") as batch:
        batch.drop_column("user_id")
