"""How management objects are shown. Secrets (password hashes, key digests, credentials) never are."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from sublane_core import Account, ApiKey, GroupAccount, GroupMember, ResourceGroup, User
from sublane_providers import provider_billing


def user_view(user: User, group_ids: list[int] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": user.id,
        "username": user.username,
        "role": user.role,
        "enabled": user.enabled,
        "member_concurrency": user.member_concurrency,
        "rpm": user.rpm,
        "totp_enabled": user.totp_enabled,  # AUTH-1
        "created_at": user.created_at,
        "updated_at": user.updated_at,
    }
    if group_ids is not None:
        view["group_ids"] = group_ids
    return view


def group_view(group: ResourceGroup, member_ids: list[int], account_ids: list[int]) -> dict[str, Any]:
    return {
        "id": group.id,
        "name": group.name,
        "model_policy": group.model_policy,
        "metered": group.metered,  # PAID-2: how the group uses its metered accounts
        "overflow_after_s": group.overflow_after_s,
        "user_ids": member_ids,
        "account_ids": account_ids,
        "created_at": group.created_at,
        "updated_at": group.updated_at,
    }


def key_state(key: ApiKey, now: float) -> str:
    """``active``, ``paused``, ``revoked`` or ``expired``."""
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active" if key.enabled else "paused"


def key_view(
    key: ApiKey, now: float, *, group_name: str | None, username: str | None = None
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": key.id,
        "name": key.name,
        "user_id": key.user_id,
        "group_id": key.group_id,
        "group_name": group_name,
        "hint": key.hint,
        "enabled": key.enabled,
        "state": key_state(key, now),
        "created_at": key.created_at,
        "expires_at": key.expires_at,
        "revoked_at": key.revoked_at,
        "allowed_ips": key.allowed_ips or [],
    }
    if username is not None:
        view["username"] = username
    return view


def account_view(account: Account, group_ids: list[int]) -> dict[str, Any]:
    return {
        "id": account.id,
        "provider": account.provider,
        "billing": provider_billing(account.provider).value,  # PAID-2
        "name": account.name,
        "enabled": account.enabled,
        "identity": {
            "email": account.identity_email,
            "plan": account.identity_plan,
            "subject": account.identity_subject,
        },
        "auth_state": account.auth_state,
        "auth_error": account.auth_error,
        "credentials_expires_at": account.credentials_expires_at,
        "max_concurrency": account.max_concurrency,
        "proxy_url": account.proxy_shown,  # EGRESS-1: the password as ***
        "monthly_price_usd": account.monthly_price_usd,  # COST-3
        "group_ids": group_ids,
        "lifecycle_revision": account.lifecycle_revision,
        "created_at": account.created_at,
        "updated_at": account.updated_at,
    }


def groups_of_users(db: Session, user_ids: list[int]) -> dict[int, list[int]]:
    """Group IDs per user, in one query."""
    result: dict[int, list[int]] = {user_id: [] for user_id in user_ids}
    if user_ids:
        rows = db.exec(
            select(GroupMember)
            .where(col(GroupMember.user_id).in_(user_ids))
            .order_by(col(GroupMember.group_id))
        )
        for row in rows:
            result[row.user_id].append(row.group_id)
    return result


def groups_of_accounts(db: Session, account_ids: list[int]) -> dict[int, list[int]]:
    """Group IDs per account, in one query."""
    result: dict[int, list[int]] = {account_id: [] for account_id in account_ids}
    if account_ids:
        rows = db.exec(
            select(GroupAccount)
            .where(col(GroupAccount.account_id).in_(account_ids))
            .order_by(col(GroupAccount.group_id))
        )
        for row in rows:
            result[row.account_id].append(row.group_id)
    return result
