"""Initial schema: people and access, accounts, runtime state and request records.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("max_concurrency", sa.Integer(), nullable=False),
        sa.Column("credentials", sa.LargeBinary(), nullable=False),
        sa.Column("credentials_expires_at", sa.Float(), nullable=True),
        sa.Column("credentials_rejected_at", sa.Float(), nullable=True),
        sa.Column("identity_email", sa.String(length=256), nullable=True),
        sa.Column("identity_plan", sa.String(length=64), nullable=True),
        sa.Column("identity_subject", sa.String(length=256), nullable=True),
        sa.Column("auth_state", sa.String(length=32), nullable=False),
        sa.Column("auth_error", sa.String(length=64), nullable=True),
        sa.Column("lifecycle_revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("name", name=op.f("uq_accounts_name")),
    )
    op.create_table(
        "request_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(length=40), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("first_token_ms", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.Integer(), nullable=True),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.Column("account_id", sa.Integer(), nullable=True),
        sa.Column("provider", sa.String(length=16), nullable=True),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("protocol", sa.String(length=32), nullable=False),
        sa.Column("operation", sa.String(length=32), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("upstream_status", sa.Integer(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("cached_tokens", sa.Integer(), nullable=True),
        sa.Column("routing", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_request_records")),
        sa.UniqueConstraint("request_id", name=op.f("uq_request_records_request_id")),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_request_records_started_at"), "request_records", ["started_at"], unique=False)
    op.create_index("ix_request_records_user_id_id", "request_records", ["user_id", "id"], unique=False)
    op.create_table(
        "resource_groups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("model_policy", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_groups")),
        sa.UniqueConstraint("name", name=op.f("uq_resource_groups_name")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.String(length=256), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("member_concurrency", sa.Integer(), nullable=False),
        sa.Column("rpm", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("username", name=op.f("uq_users_username")),
    )
    op.create_table(
        "account_cooldowns",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("until", sa.Float(), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("failure_streak", sa.Integer(), nullable=False),
        sa.Column("lifecycle_revision", sa.Integer(), nullable=False),
        sa.Column("runtime_revision", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_account_cooldowns_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", "model", name=op.f("pk_account_cooldowns")),
    )
    op.create_table(
        "affinity",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_used_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_affinity_account_id_accounts"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["resource_groups.id"],
            name=op.f("fk_affinity_group_id_resource_groups"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("digest", name=op.f("pk_affinity")),
    )
    op.create_index(op.f("ix_affinity_account_id"), "affinity", ["account_id"], unique=False)
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("hint", sa.String(length=16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["resource_groups.id"],
            name=op.f("fk_api_keys_group_id_resource_groups"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_keys_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("digest", name=op.f("uq_api_keys_digest")),
    )
    op.create_table(
        "group_accounts",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_group_accounts_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["resource_groups.id"],
            name=op.f("fk_group_accounts_group_id_resource_groups"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("group_id", "account_id", name=op.f("pk_group_accounts")),
    )
    op.create_index(op.f("ix_group_accounts_account_id"), "group_accounts", ["account_id"], unique=False)
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["resource_groups.id"],
            name=op.f("fk_group_members_group_id_resource_groups"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_group_members_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("group_id", "user_id", name=op.f("pk_group_members")),
    )
    op.create_table(
        "quota_observations",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("window", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("main", sa.Boolean(), nullable=False),
        sa.Column("used_percent", sa.Float(), nullable=True),
        sa.Column("window_seconds", sa.Integer(), nullable=True),
        sa.Column("resets_at", sa.Float(), nullable=True),
        sa.Column("limit_reached", sa.Boolean(), nullable=False),
        sa.Column("plan", sa.String(length=64), nullable=True),
        sa.Column("observed_at", sa.Float(), nullable=False),
        sa.Column("lifecycle_revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_quota_observations_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", "window", "model", name=op.f("pk_quota_observations")),
    )
    op.create_table(
        "web_sessions",
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_web_sessions_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_digest", name=op.f("pk_web_sessions")),
    )
    op.create_index(op.f("ix_web_sessions_expires_at"), "web_sessions", ["expires_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_web_sessions_expires_at"), table_name="web_sessions")
    op.drop_table("web_sessions")
    op.drop_table("quota_observations")
    op.drop_table("group_members")
    op.drop_index(op.f("ix_group_accounts_account_id"), table_name="group_accounts")
    op.drop_table("group_accounts")
    op.drop_table("api_keys")
    op.drop_index(op.f("ix_affinity_account_id"), table_name="affinity")
    op.drop_table("affinity")
    op.drop_table("account_cooldowns")
    op.drop_table("users")
    op.drop_table("resource_groups")
    op.drop_index("ix_request_records_user_id_id", table_name="request_records")
    op.drop_index(op.f("ix_request_records_started_at"), table_name="request_records")
    op.drop_table("request_records")
    op.drop_table("accounts")
