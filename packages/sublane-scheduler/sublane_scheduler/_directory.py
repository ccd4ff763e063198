"""An in-memory picture of accounts and group membership, so selection needs no query per request.

It is reloaded lazily after anything that changes accounts or groups (``account_changed``,
``access_changed``): the next selection reads the tables once.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import AUTH_OK, Account, GroupAccount


@dataclass(frozen=True, slots=True)
class AccountInfo:
    """What selection needs to know of an account."""

    id: int
    provider: str
    name: str
    enabled: bool
    max_concurrency: int
    auth_ok: bool
    lifecycle_revision: int


class AccountDirectory:
    """Accounts by group, reloaded on demand after changes."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._stale = True
        self._generation = 0
        self._accounts: dict[int, AccountInfo] = {}
        self._by_group: dict[int, tuple[int, ...]] = {}

    def invalidate(self, _payload: object = None) -> None:
        """Mark the picture stale (connected to the change signals)."""
        self._generation += 1
        self._stale = True

    async def refresh(self) -> None:
        """Reload when stale; a no-op otherwise."""
        if not self._stale:
            return
        generation = self._generation
        accounts, by_group = await anyio.to_thread.run_sync(self._load)
        self._accounts, self._by_group = accounts, by_group
        if generation == self._generation:
            self._stale = False

    def _load(self) -> tuple[dict[int, AccountInfo], dict[int, tuple[int, ...]]]:
        with Session(self._engine) as db:
            accounts = {
                account.id: AccountInfo(
                    id=account.id,
                    provider=account.provider,
                    name=account.name,
                    enabled=account.enabled,
                    max_concurrency=account.max_concurrency,
                    auth_ok=account.auth_state == AUTH_OK,
                    lifecycle_revision=account.lifecycle_revision,
                )
                for account in db.exec(select(Account))
                if account.id is not None
            }
            groups: dict[int, list[int]] = {}
            for link in db.exec(select(GroupAccount)):
                groups.setdefault(link.group_id, []).append(link.account_id)
        return accounts, {group: tuple(sorted(ids)) for group, ids in groups.items()}

    def get(self, account_id: int) -> AccountInfo | None:
        return self._accounts.get(account_id)

    def all(self) -> list[AccountInfo]:
        return list(self._accounts.values())

    def in_group(self, group_id: int, account_id: int) -> bool:
        """Whether the account is (still) in the group."""
        return account_id in self._by_group.get(group_id, ())

    def of_group(self, group_id: int) -> list[AccountInfo]:
        """The group's accounts, in a stable order."""
        return [
            self._accounts[account_id]
            for account_id in self._by_group.get(group_id, ())
            if account_id in self._accounts
        ]
