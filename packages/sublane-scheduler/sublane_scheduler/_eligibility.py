"""Which of a group's accounts may serve a model now, and why the others may not (AFF-8).

The scheduler owns this decision; what it needs to know from elsewhere — which models an account
serves, whether its credentials are usable, what its subscription quota says — it asks through the
small interfaces below, which the gateway wires to the model catalogue, the credential vault and
the quota observer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import field
from typing import Protocol

from sublane_core import Billing, MeteredRouting, immutable
from sublane_scheduler._directory import AccountDirectory, AccountInfo, GroupMetering


class ModelSupport(Protocol):
    """The models an account serves."""

    def ready(self, account_id: int, provider: str) -> frozenset[str] | None:
        """The models, when known without waiting; ``None``: ask :meth:`models_of` (a discovery
        may be due). Asked first, so a warm catalogue costs no task and no await."""
        ...

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]: ...


class CredentialHealth(Protocol):
    """Whether an account's credentials stopped being usable (re-authorization required)."""

    def needs_reauth(self, account_id: int) -> bool: ...

    def refresh_retry_at(self, account_id: int) -> float | None:
        """When a backing-off refresh may be tried again; ``None`` when not backing off (AFF-8)."""
        ...


class SubscriptionQuota(Protocol):
    """What the accounts' subscription quota says (QUOTA, QW), as fresh observations tell it."""

    def exhausted_until(self, account_id: int, model: str) -> float | None:
        """When to look again (Unix time) if the account is out of quota for ``model`` by a fresh
        observation of its main limit (QUOTA-3/4); ``None`` when it is not, or nothing fresh is known."""
        ...

    def remaining(self, account_id: int, model: str) -> float | None:
        """The remaining fraction (0–1) of the account's most constrained fresh main window, when
        every such window is complete (QW-2); ``None`` otherwise."""
        ...

    def demand(self, account_id: int, provider: str, lifecycle_revision: int) -> None:
        """Model traffic considered the account: refresh its quota in the background if due (QUOTA-1).

        Must return at once: the request never waits for a quota read."""
        ...


class MeteredSpend(Protocol):
    """PAID-3's spend caps, as selection asks them (the gateway wires the spend ledger)."""

    def blocked(self, group_id: int, user_id: int, model: str) -> tuple[str, float | None] | None:
        """Why metered accounts may not serve this caller now: ("metered_budget_exhausted",
        reset_at_unix) or ("unpriced_model", None); None when they may."""
        ...


#: Asks :class:`MeteredSpend` for one call: ``None`` when metered accounts may serve it.
SpendCheck = Callable[[], tuple[str, float | None] | None]


@immutable
class MeteredCandidates:
    """PAID-2: what selection needs to place a group's metered accounts among the candidates.

    Present only for a group that has a metered account (a subscription-only group pays nothing).
    The metered candidates stay in :attr:`Candidates.accounts` (a conversation bound to one keeps
    it, AFF-3); the scheduler decides, with the cooldowns and slots it alone knows, whether a new
    selection may use them: ``normal`` always, ``overflow`` only when no subscription candidate
    can take the call now or the call waited ``overflow_after_s`` in the queue.
    """

    routing: MeteredRouting
    overflow_after_s: float
    #: The group's subscription accounts (of the call's providers) that are disabled or unauthorized.
    subscription_unavailable: int = 0
    #: Metered accounts left out because the group's routing is ``off`` (a binding to one is released).
    off: frozenset[int] = frozenset()
    #: PAID-3: asked only when a metered account would otherwise serve the call; ``None``: no caps.
    spend: SpendCheck | None = None


@immutable
class Candidates:
    """The group's accounts that may serve the model now, and why the others may not."""

    accounts: list[AccountInfo]
    excluded: dict[str, int] = field(default_factory=dict)
    #: Accounts whose credential refresh is backing off, and when it may be tried again: never
    #: chosen for new selection (AFF-8, OPS-5); a conversation bound to one stays (CRED-7).
    backing_off: dict[int, float] = field(default_factory=dict)
    #: Accounts out of quota for the model by a fresh observation, and when to look again
    #: (QUOTA-3): never chosen anew; a conversation bound to one gets ``quota_exhausted`` (QUOTA-7).
    quota: dict[int, float] = field(default_factory=dict)
    #: Remaining quota fraction by account, when quota-weighted rotation is on (QW-1).
    remaining: dict[int, float] | None = None
    #: PAID-2: the group's metered routing, when it has metered accounts; ``None`` otherwise.
    metered: MeteredCandidates | None = None

    def without(self, account_ids: Collection[int], reason: str) -> Candidates:
        """These candidates less ``account_ids``, counted as excluded for ``reason``."""
        kept = [account for account in self.accounts if account.id not in account_ids]
        excluded = dict(self.excluded)
        if len(kept) != len(self.accounts):
            excluded[reason] = excluded.get(reason, 0) + len(self.accounts) - len(kept)
        return Candidates(kept, excluded, self.backing_off, self.quota, self.remaining, self.metered)


class Eligibility:
    """Reads candidates from the account directory (kept true to the database by the gateway)."""

    def __init__(
        self,
        directory: AccountDirectory,
        models: ModelSupport,
        health: CredentialHealth,
        quota: SubscriptionQuota | None = None,
        *,
        weighted: bool = False,
        metered_spend: MeteredSpend | None = None,
    ) -> None:
        self._directory = directory
        self._models = models
        self._health = health
        self.quota = quota
        self._weighted = weighted and quota is not None
        self.metered_spend = metered_spend

    async def candidates(
        self, group_id: int, model: str, providers: Collection[str] | None, user_id: int = 0
    ) -> Candidates:
        """Accounts of the group (of ``providers``, when given) that may serve ``model``.

        Read again after every wait (WAIT-5): the directory reloads after changes. ``user_id`` is
        the caller, whose metered spend PAID-3 may cap.
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
        supported = await self._supported(usable)
        accounts = []
        for account, models in zip(usable, supported, strict=True):
            if models is not None and model in models:
                accounts.append(account)
            else:
                excluded["model_support"] = excluded.get("model_support", 0) + 1
        if (
            isinstance(providers, (tuple, list))
            and len(providers) > 1
            and len({account.provider for account in accounts}) > 1  # else the order stands
        ):
            # AFF-6: the providers come in preference order (the client protocol's native one
            # first); the rotation walks the candidates in this order, so ties go to it.
            rank = {name: index for index, name in enumerate(providers)}
            accounts.sort(key=lambda account: rank.get(account.provider, len(rank)))
        health = self._health
        backing_off = {
            account.id: retry_at
            for account in accounts
            if (retry_at := health.refresh_retry_at(account.id)) is not None
        }
        quota = self.quota
        if quota is None:
            found = Candidates(accounts, excluded, backing_off)
        else:
            exhausted: dict[int, float] = {}
            remaining: dict[int, float] | None = {} if self._weighted else None
            for account in accounts:
                if account.id not in backing_off:
                    quota.demand(account.id, account.provider, account.lifecycle_revision)  # QUOTA-1
                until = quota.exhausted_until(account.id, model)
                if until is not None:
                    exhausted[account.id] = until
                elif remaining is not None:
                    fraction = quota.remaining(account.id, model)
                    if fraction is not None:
                        remaining[account.id] = fraction
            found = Candidates(accounts, excluded, backing_off, exhausted, remaining)
        # PAID-2: only a group with a metered account has an entry (a workspace without any pays
        # one truth test, a subscription-only group one lookup more)
        metering = self._directory.metering
        if not metering or (group_metering := metering.get(group_id)) is None:
            return found
        return self._metered(found, group_metering, group_id, user_id, model, providers)

    def _metered(
        self,
        found: Candidates,
        metering: GroupMetering,
        group_id: int,
        user_id: int,
        model: str,
        providers: Collection[str] | None,
    ) -> Candidates:
        """``found`` with the group's metered routing (PAID-2): ``off`` leaves the metered
        accounts out; the others stay, for the scheduler to place (:class:`MeteredCandidates`)."""
        health = self._health
        unavailable = sum(
            1
            for account in self._directory.of_group(group_id)
            if account.billing is not Billing.METERED
            and (providers is None or account.provider in providers)
            and (not account.enabled or not account.auth_ok or health.needs_reauth(account.id))
        )
        accounts, excluded, off = found.accounts, found.excluded, frozenset[int]()
        if metering.routing is MeteredRouting.OFF:
            off = frozenset(account.id for account in accounts if account.billing is Billing.METERED)
            if off:
                accounts = [account for account in accounts if account.id not in off]
                excluded = {**excluded, "metered_off": len(off)}
        spend = self.metered_spend
        check: SpendCheck | None = None
        if spend is not None:

            def check() -> tuple[str, float | None] | None:
                return spend.blocked(group_id, user_id, model)

        metered = MeteredCandidates(metering.routing, metering.overflow_after_s, unavailable, off, check)
        return Candidates(accounts, excluded, found.backing_off, found.quota, found.remaining, metered)

    async def _supported(self, accounts: list[AccountInfo]) -> list[frozenset[str] | None]:
        """The models of each account: the ready ones at once, the others discovered concurrently."""
        models = self._models
        supported = [models.ready(account.id, account.provider) for account in accounts]
        if None in supported:  # unknown or over-age catalogues (most calls find every one ready)
            missing = [index for index, found in enumerate(supported) if found is None]
            found = await asyncio.gather(
                *(models.models_of(accounts[index].id, accounts[index].provider) for index in missing)
            )
            for index, names in zip(missing, found, strict=True):
                supported[index] = names
        return supported
