"""The shared tables history reads, as SQLAlchemy Core objects (set-based queries, no ORM rows)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import SQLModel

import sublane_core  # noqa: F401  (declares the tables on SQLModel.metadata)

RECORDS: sa.Table = SQLModel.metadata.tables["request_records"]
USERS: sa.Table = SQLModel.metadata.tables["users"]
KEYS: sa.Table = SQLModel.metadata.tables["api_keys"]
ACCOUNTS: sa.Table = SQLModel.metadata.tables["accounts"]
GROUPS: sa.Table = SQLModel.metadata.tables["resource_groups"]
USAGE_DAYS: sa.Table = SQLModel.metadata.tables["usage_days"]
USAGE_ACCOUNT_DAYS: sa.Table = SQLModel.metadata.tables["usage_account_days"]
USAGE_HOURS: sa.Table = SQLModel.metadata.tables["usage_hours"]
USAGE_CACHE_ACCOUNTS: sa.Table = SQLModel.metadata.tables["usage_cache_accounts"]
USAGE_GROUP_HOURS: sa.Table = SQLModel.metadata.tables["usage_group_hours"]
BUDGETS: sa.Table = SQLModel.metadata.tables["token_budgets"]
