"""A small workspace for the scheduler's tests: groups and accounts in a real SQLite file, and a
scheduler built from the package's real parts over it (only the clock is fake).

``Workspace.eligible`` plays the gateway's part (``client/_dispatch.eligible_accounts``): the group's
accounts that are enabled, authorized and list the model, re-read after every wait (WAIT-5).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from sublane_core import Account, Billing, FakeClock, GroupAccount, MeteredRouting, ResourceGroup
from sublane_scheduler import (
    AccountDirectory,
    AccountInfo,
    Admission,
    AffinityStore,
    Candidates,
    CooldownBook,
    CooldownPolicy,
    Eligibility,
    Grant,
    LeaseTable,
    MeteredSpend,
    RouteRequest,
    Scheduler,
    WaitRoom,
)

Eligible = Callable[[], Awaitable[Candidates]]

MODEL = "gpt-5"
OTHER_MODEL = "gpt-5-mini"
#: The provider whose accounts these tests treat as metered (PAID-2); the gateway asks the
#: providers' plugins, these tests this stand-in.
METERED = "metered-api"


def billing(provider: str) -> Billing:
    return Billing.METERED if provider == METERED else Billing.SUBSCRIPTION


class Workspace:
    """Groups, accounts and the models each account lists, over one database."""

    def __init__(self, engine: Engine, clock: FakeClock) -> None:
        self.engine = engine
        self.clock = clock
        self.directory = AccountDirectory(engine, billing)
        self.models: dict[int, set[str]] = {}
        self.reauth: set[int] = set()  # accounts whose credentials need re-authorization
        #: accounts whose credential refresh backs off → when it may be tried again (AFF-8)
        self.backing_off: dict[int, float] = {}
        self.exhausted: dict[int, float] = {}  # accounts out of quota → when to look again (QUOTA-3)
        self.remaining: dict[int, float] | None = None  # remaining quota fractions, with QW on
        self._names = itertools.count(1)
        self._requests = itertools.count(1)

    # -- rows -------------------------------------------------------------------------------------

    def group(self) -> int:
        now = self.clock.time()
        with Session(self.engine) as db:
            group = ResourceGroup(name=f"group-{next(self._names)}", created_at=now, updated_at=now)
            db.add(group)
            db.commit()
            assert group.id is not None
            return group.id

    def account(
        self,
        *groups: int,
        provider: str = "codex",
        limit: int = 2,
        models: tuple[str, ...] = (MODEL,),
        enabled: bool = True,
    ) -> int:
        now = self.clock.time()
        with Session(self.engine) as db:
            account = Account(
                provider=provider,
                name=f"{provider}-{next(self._names)}",
                enabled=enabled,
                max_concurrency=limit,
                credentials=b"sealed",
                created_at=now,
                updated_at=now,
            )
            db.add(account)
            db.commit()
            assert account.id is not None
            for group_id in groups:
                db.add(GroupAccount(group_id=group_id, account_id=account.id))
            db.commit()
            self.models[account.id] = set(models)
            self.directory.invalidate()
            return account.id

    async def change(self, account_id: int, **fields: Any) -> None:
        """Update an account row, then reload the directory as the gateway does after a change."""
        with Session(self.engine) as db:
            account = db.get(Account, account_id)
            assert account is not None
            for name, value in fields.items():
                setattr(account, name, value)
            db.add(account)
            db.commit()
        self.directory.invalidate()
        await self.directory.refresh()

    async def leave_group(self, account_id: int, group_id: int) -> None:
        """Take an account out of a group, then reload the directory as the gateway does."""
        with Session(self.engine) as db:
            row = db.get(GroupAccount, (group_id, account_id))
            assert row is not None
            db.delete(row)
            db.commit()
        self.directory.invalidate()
        await self.directory.refresh()

    async def meter(self, group_id: int, routing: MeteredRouting, overflow_after_s: float = 5.0) -> None:
        """Set a group's metered routing (PAID-2), then reload the directory as the gateway does."""
        with Session(self.engine) as db:
            group = db.get(ResourceGroup, group_id)
            assert group is not None
            group.metered = routing.value
            group.overflow_after_s = overflow_after_s
            db.add(group)
            db.commit()
        self.directory.invalidate()
        await self.directory.refresh()

    def eligibility(self, spend: MeteredSpend | None = None) -> Eligibility:
        """The package's real :class:`Eligibility` over this workspace's models, health and quota."""
        return Eligibility(self.directory, _Models(self), _Health(self), _Quota(self), metered_spend=spend)

    # -- the scheduler ----------------------------------------------------------------------------

    def eligible(self, group_id: int, model: str = MODEL) -> Eligible:
        async def eligible() -> Candidates:
            await self.directory.refresh()
            excluded: dict[str, int] = {}
            accounts: list[AccountInfo] = []
            for account in self.directory.of_group(group_id):
                if not account.enabled or not account.auth_ok:
                    excluded["unavailable"] = excluded.get("unavailable", 0) + 1
                elif model not in self.models.get(account.id, set()):
                    excluded["model_support"] = excluded.get("model_support", 0) + 1
                else:
                    accounts.append(account)
            quota = {a.id: until for a in accounts if (until := self.exhausted.get(a.id)) is not None}
            remaining = None if self.remaining is None else dict(self.remaining)
            return Candidates(accounts, excluded, dict(self.backing_off), quota, remaining)

        return eligible

    def scheduler(
        self,
        *,
        capacity: int = 128,
        queue: int = 100,
        wait_timeout_s: float = 30.0,
        policy: CooldownPolicy | None = None,
        room: WaitRoom | None = None,
        affinity: AffinityStore | None = None,
        eligibility: Eligibility | None = None,
    ) -> Scheduler:
        return Scheduler(
            clock=self.clock,
            directory=self.directory,
            leases=LeaseTable(),
            cooldowns=CooldownBook(self.clock, policy or CooldownPolicy()),
            affinity=affinity or AffinityStore(self.engine, self.clock),
            admission=Admission(self.clock, capacity),
            room=room or WaitRoom(queue),
            wait_timeout_s=wait_timeout_s,
            eligibility=eligibility,
        )

    def route(
        self, group_id: int, *, model: str = MODEL, key: str | None = None, user: int = 1, **extra: Any
    ) -> RouteRequest:
        return RouteRequest(
            request_id=f"req-{next(self._requests)}",
            user_id=user,
            group_id=group_id,
            model=model,
            conversation_key=key,
            **extra,
        )

    def start(
        self, scheduler: Scheduler, group_id: int, *, model: str = MODEL, **extra: Any
    ) -> asyncio.Task[Grant]:
        """``scheduler.acquire`` of a new request, as a task of its own."""
        request = self.route(group_id, model=model, **extra)
        return asyncio.ensure_future(scheduler.acquire(request, self.eligible(group_id, model)))

    async def grant(self, scheduler: Scheduler, group_id: int, *, model: str = MODEL, **extra: Any) -> Grant:
        request = self.route(group_id, model=model, **extra)
        return await scheduler.acquire(request, self.eligible(group_id, model))


class _Models:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def ready(self, account_id: int, provider: str) -> frozenset[str] | None:
        return frozenset(self.workspace.models.get(account_id, ()))

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]:
        return frozenset(self.workspace.models.get(account_id, ()))


class _Health:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def needs_reauth(self, account_id: int) -> bool:
        return account_id in self.workspace.reauth

    def refresh_retry_at(self, account_id: int) -> float | None:
        return self.workspace.backing_off.get(account_id)


class _Quota:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def exhausted_until(self, account_id: int, model: str) -> float | None:
        return self.workspace.exhausted.get(account_id)

    def remaining(self, account_id: int, model: str) -> float | None:
        return None

    def demand(self, account_id: int, provider: str, lifecycle_revision: int) -> None:
        return None


async def eventually(predicate: Callable[[], bool], timeout_s: float = 3.0) -> None:
    """Let the loop (and the database threads) run until ``predicate()`` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("the condition never became true")
        await asyncio.sleep(0.001)


async def settle() -> None:
    """A few turns of the loop: enough for callbacks already scheduled to run."""
    for _ in range(10):
        await asyncio.sleep(0)
