"""An in-memory picture of accounts and group membership, so selection needs no query per request.

It is reloaded lazily after anything that changes accounts or groups (``account_changed``,
``access_changed``): the next selection reads the tables once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import AUTH_OK, Account, Billing, GroupAccount, MeteredRouting, ResourceGroup


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
    #: PAID-2: how the account is paid for (its provider's billing, told by the gateway).
    billing: Billing = Billing.SUBSCRIPTION


@dataclass(frozen=True, slots=True)
class GroupMetering:
    """PAID-2: how a group that has metered accounts uses them (groups without any have none)."""

    routing: MeteredRouting
    overflow_after_s: float


def _every_account_subscribed(_provider: str) -> Billing:
    return Billing.SUBSCRIPTION


_Loaded = tuple[dict[int, AccountInfo], dict[int, tuple[int, ...]], dict[int, GroupMetering]]


class AccountDirectory:
    """Accounts by group, reloaded on demand after changes.

    ``billing`` tells how a provider's accounts are paid for (the scheduler knows no provider: the
    gateway passes ``sublane_providers.provider_billing``); without it every account is a
    subscription.
    """

    def __init__(self, engine: Engine, billing: Callable[[str], Billing] | None = None) -> None:
        self._engine = engine
        self._billing = billing or _every_account_subscribed
        self._stale = True
        self._generation = 0
        self._accounts: dict[int, AccountInfo] = {}
        self._by_group: dict[int, tuple[int, ...]] = {}
        #: PAID-2: how each group that has a metered account uses them, by group ID; a
        #: subscription-only group has no entry, so its path asks one dict lookup.
        self.metering: dict[int, GroupMetering] = {}

    def invalidate(self, _payload: object = None) -> None:
        """Mark the picture stale (connected to the change signals)."""
        self._generation += 1
        self._stale = True

    async def refresh(self) -> None:
        """Reload when stale; a no-op otherwise."""
        if not self._stale:
            return
        generation = self._generation
        accounts, by_group, metering = await anyio.to_thread.run_sync(self._load)
        self._accounts, self._by_group, self.metering = accounts, by_group, metering
        if generation == self._generation:
            self._stale = False

    def _load(self) -> _Loaded:
        billing_of = self._billing
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
                    billing=billing_of(account.provider),
                )
                for account in db.exec(select(Account))
                if account.id is not None
            }
            groups: dict[int, list[int]] = {}
            for link in db.exec(select(GroupAccount)):
                groups.setdefault(link.group_id, []).append(link.account_id)
            metered_groups = {
                group_id
                for group_id, ids in groups.items()
                if any(
                    (account := accounts.get(account_id)) is not None and account.billing is Billing.METERED
                    for account_id in ids
                )
            }
            metering: dict[int, GroupMetering] = {}
            if metered_groups:
                for group in db.exec(select(ResourceGroup)):
                    if group.id in metered_groups:
                        metering[group.id] = GroupMetering(
                            _routing(group.metered), max(0.0, float(group.overflow_after_s))
                        )
        return accounts, {group: tuple(sorted(ids)) for group, ids in groups.items()}, metering

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


def _routing(value: str) -> MeteredRouting:
    """A stored routing value; an unknown one (a newer release's) reads as the default."""
    try:
        return MeteredRouting(value)
    except ValueError:
        return MeteredRouting.OVERFLOW
