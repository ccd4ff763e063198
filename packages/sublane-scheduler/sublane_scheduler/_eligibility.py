"""Which of a group's accounts may serve a model now, and why the others may not (AFF-8).

The scheduler owns this decision; what it needs to know from elsewhere — which models an account
serves, whether its credentials are usable — it asks through the two small interfaces below, which
the gateway wires to the model catalogue and the credential vault.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Protocol

from sublane_scheduler._directory import AccountDirectory, AccountInfo


class ModelSupport(Protocol):
    """The models an account serves."""

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]: ...


class CredentialHealth(Protocol):
    """Whether an account's credentials stopped being usable (re-authorization required)."""

    def needs_reauth(self, account_id: int) -> bool: ...

    def refresh_retry_at(self, account_id: int) -> float | None:
        """When a backing-off refresh may be tried again; ``None`` when not backing off (AFF-8)."""
        ...


@dataclass(frozen=True, slots=True)
class Candidates:
    """The group's accounts that may serve the model now, and why the others may not."""

    accounts: list[AccountInfo]
    excluded: dict[str, int] = field(default_factory=dict)
    #: Accounts whose credential refresh is backing off: passed over for new selection (AFF-8).
    backing_off: frozenset[int] = frozenset()


class Eligibility:
    """Reads candidates from the account directory (kept true to the database by the gateway)."""

    def __init__(self, directory: AccountDirectory, models: ModelSupport, health: CredentialHealth) -> None:
        self._directory = directory
        self._models = models
        self._health = health

    async def candidates(self, group_id: int, model: str, providers: Collection[str] | None) -> Candidates:
        """Accounts of the group (of ``providers``, when given) that may serve ``model``.

        Read again after every wait (WAIT-5): the directory reloads after changes.
        """
        await self._directory.refresh()
        excluded: dict[str, int] = {}
        usable: list[AccountInfo] = []
        for account in self._directory.of_group(group_id):
            if providers is not None and account.provider not in providers:
                continue
            if not account.enabled or not account.auth_ok or self._health.needs_reauth(account.id):
                excluded["unavailable"] = excluded.get("unavailable", 0) + 1
                continue
            usable.append(account)
        supported = await asyncio.gather(*(self._models.models_of(a.id, a.provider) for a in usable))
        accounts = []
        for account, models in zip(usable, supported, strict=True):
            if model in models:
                accounts.append(account)
            else:
                excluded["model_support"] = excluded.get("model_support", 0) + 1
        if isinstance(providers, tuple | list) and len(providers) > 1:
            # AFF-6: the providers come in preference order (the client protocol's native one
            # first); the rotation walks the candidates in this order, so ties go to it.
            rank = {name: index for index, name in enumerate(providers)}
            accounts.sort(key=lambda account: rank.get(account.provider, len(rank)))
        health = self._health
        backing_off = frozenset(a.id for a in accounts if health.refresh_retry_at(a.id) is not None)
        return Candidates(accounts, excluded, backing_off)
