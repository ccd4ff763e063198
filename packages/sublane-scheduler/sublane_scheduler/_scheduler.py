"""Choosing an account for a model request and taking its slot (SPEC §1–3).

The scheduler keeps the hot path in memory: the account directory, the lease table, cooldowns and
cached bindings. Per request it reads at most one binding from the database (the first time a
conversation is seen in this process) and writes one when a binding is made.

Order of decisions: admission (ADM-2…4) → the group's eligible accounts (model support, policy,
health, subscription quota; re-checked after every wake-up, WAIT-5) → a bound conversation keeps
its account, cooling or out of quota or not (AFF-3, WAIT-9, QUOTA-7), unless the client switched
model with full history and the account cannot serve it (AFF-4) → otherwise rotation among
accounts that are neither cooling nor out of quota — uniform (AFF-5) or by remaining quota (QW-1)
→ a free slot, or a wait in the group's queue (WAIT).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Protocol

from sublane_core import ACCOUNT_WIDE, Billing, Clock, MeteredRouting, SubLaneError, immutable, signals
from sublane_scheduler._admission import Admission, Ticket
from sublane_scheduler._affinity import AffinityStore, binding_digest
from sublane_scheduler._cooldowns import MAX_RETRY_AFTER_HINT_S, Cooldown, CooldownBook
from sublane_scheduler._directory import AccountDirectory, AccountInfo
from sublane_scheduler._eligibility import Candidates, Eligibility, MeteredCandidates
from sublane_scheduler._leases import Lease, LeaseTable
from sublane_scheduler._overflow import (
    BOUND,
    HELD,
    NORMAL,
    WAITED,
    blocked_reason,
    excluded_by,
    spend_error,
)
from sublane_scheduler._rotation import RoundRobin
from sublane_scheduler._shared_slots import Admitting, SharedSlots
from sublane_scheduler._waiting import Reconsider, Waiter, WaitRoom, wait_for_lease


@immutable
class RouteRequest:
    """What selection needs to know about a request."""

    request_id: str
    user_id: int
    group_id: int
    model: str
    conversation_key: str | None = None
    continuation: bool = False  # carries an upstream continuation (previous_response_id): AFF-4 never applies
    member_limit: int = 0
    rpm: int = 0
    wait: bool = True  # False: no slot now means account_wait_timeout at once (e.g. a prewarm)
    providers: Collection[str] | None = None  # the providers that can serve the call; None: any
    #: The parent conversation's key of a Codex auto-review request (REVIEW-1): its account is
    #: preferred when this request has no binding of its own and that account is eligible.
    parent_key: str | None = None
    #: Accounts this logical request already tried and left (FAIL-1): never candidates again.
    exclude: frozenset[int] = frozenset()


Eligible = Callable[[], Awaitable[Candidates]]


class Recheck(Protocol):
    """Re-checks the caller's access (key, member, group, model policy) before every selection
    (WAIT-5); raises :class:`~sublane_core.SubLaneError` when it no longer holds."""

    def __call__(self) -> Awaitable[object]: ...


@dataclass(slots=True)
class Grant:
    """A slot on an account, with what selection decided (HIST-12) and the revision at dispatch (COOL-5)."""

    lease: Lease
    account: AccountInfo
    revision: int
    routing: dict[str, Any]
    bound: bool
    ticket: Ticket
    cooldowns: CooldownBook
    offer: Callable[[int], None]
    #: The conversation's binding digest when this grant made (or moved) the binding; a request
    #: that fails over or fails takes it back (FAIL-2: bound only to the account that answered).
    made_binding: str | None = None

    @property
    def may_fail_over(self) -> bool:
        """FAIL-1: the request was not bound to this account before it was routed here (sessionless,
        a new conversation, a released binding, a model switch that moved it, an auto-review
        child); a conversation kept on its bound account never moves (AFF-3)."""
        return self.made_binding is not None or self.routing.get("rule") != "kept_binding"

    def release(self, outcome: str) -> None:
        """Give back the slot and the admission ticket (each once)."""
        self.lease.release(outcome)
        self.ticket.close()

    # -- what the upstream answered: direct calls, so the outcome applies before anything else runs

    def report_success(self) -> None:
        """The upstream served the call: failure streaks clear; a proven account takes waiters (COOL-4)."""
        if self.cooldowns.succeeded(self.account.id, self.lease.model, self.revision):
            self.offer(self.account.id)

    def report_failure(self, *, model: str | None = None) -> None:
        """A transient failure (5xx, broken stream) of the call's model, or of ``model`` (MCOOL-1)."""
        self.cooldowns.failed(self.account.id, self.lease.model if model is None else model, self.revision)

    def report_rate_limited(
        self, retry_after_s: float | None, reason: str, *, model: str | None = None
    ) -> None:
        """An upstream 429: account-wide (COOL-1), or for one model when ``model`` is given (AGL-1)."""
        if model is None:
            self.cooldowns.rate_limited(self.account.id, retry_after_s, reason)
        else:
            self.cooldowns.model_limited(self.account.id, model, retry_after_s, "provider:" + reason)


class Scheduler:
    """One per gateway process."""

    def __init__(
        self,
        *,
        clock: Clock,
        directory: AccountDirectory,
        leases: LeaseTable,
        cooldowns: CooldownBook,
        affinity: AffinityStore,
        admission: Admission,
        room: WaitRoom,
        wait_timeout_s: float,
        eligibility: Eligibility | None = None,
        shared: SharedSlots | None = None,
    ) -> None:
        self.clock = clock
        self.directory = directory
        self.leases = leases
        self.cooldowns = cooldowns
        self.affinity = affinity
        self.admission = admission
        self.room = room
        self.wait_timeout_s = wait_timeout_s
        self.eligibility = eligibility
        self.rotation = RoundRobin()
        #: SCALE-2: account slots, waiting and member limits shared with other replicas through
        #: Redis; ``None`` in one process (the in-process lease table decides alone).
        self.shared = shared
        if shared is None:
            leases.on_release(self.offer)
        else:
            leases.on_give_back(shared.given_back)
            shared.on_released = self.offer  # once Redis has the slot back
        #: Members' admissions to send with their request's first slot, by ``id(request)``.
        self._admitting: dict[int, Admitting] = {}

    # -- slots ------------------------------------------------------------------------------------

    def take(self, account: AccountInfo, model: str, request_id: str) -> Lease | None:
        """A slot on ``account`` if it admits one now: its limit, or a single recovery probe (COOL-4)."""
        room = self._room(account, model)
        if room is None:
            return None
        limit, model_cap = room
        if model_cap and self.leases.in_flight_model(account.id, model) >= model_cap:
            return None
        return self.leases.try_acquire(account.id, limit, request_id, model)

    def _room(self, account: AccountInfo, model: str) -> tuple[int, int] | None:
        """What ``account`` may admit for ``model`` now — ``(slots in all, slots of this model; 0:
        no cap of its own)`` — or ``None`` (gone, or cooling). The rules of :meth:`take`, in one
        process or over every replica (:meth:`_take_shared`)."""
        # The limit as the directory knows it now: ``account`` may come from a candidate list read
        # before an await during which a lowered limit was loaded (ADM-7).
        current = self.directory.get(account.id)
        if current is None or self.cooldowns.blocking(account.id, model) is not None:
            return None
        if self.cooldowns.probe_only(account.id, ACCOUNT_WIDE):  # COOL-4: past an account cooldown
            return 1, 0
        # Past a model cooldown, one request of that model at a time until one succeeds; the
        # account's other models keep their normal concurrency (MCOOL-3), and their traffic must not
        # keep the model from ever being probed.
        return current.max_concurrency, 1 if self.cooldowns.probe_only(account.id, model) else 0

    def offer(self, account_id: int) -> None:
        """A slot freed or a limit rose: hand it to the account's oldest waiter (WAIT-3, ADM-7).

        Waiters whose model the account can no longer serve because it began cooling are woken
        first, to decide again (WAIT-9).
        """
        if not self.room.has_waiters(account_id):  # the usual release: nobody to hand it to
            return
        account = self.directory.get(account_id)
        if account is None:
            return
        self.room.reconsider(
            account_id, lambda waiter: self.cooldowns.blocking(account_id, waiter.model) is not None
        )
        if self.shared is not None:  # Redis decides who gets the slot: the waiters ask it again
            self.room.nudge(account_id)
            return

        def try_lease(_account_id: int, waiter: Waiter) -> Lease | None:
            return self.take(account, waiter.model, waiter.request_id)

        self.room.offer(account_id, try_lease)

    def limits_changed(self, account_id: int) -> None:
        """After a limit change: waiters may fit now (raise); a lower limit only stops new admissions."""
        self.offer(account_id)

    # -- selection --------------------------------------------------------------------------------

    async def route(self, request: RouteRequest, recheck: Recheck) -> Grant:
        """Admit, select among the eligible accounts (:class:`Eligibility`) and take a slot.

        ``recheck`` runs before every selection, the first and each after a wait (WAIT-5). The
        answer is a grant with its routing explanation, or a :class:`~sublane_core.SubLaneError`.
        """
        eligibility = self.eligibility
        if eligibility is None:
            raise RuntimeError("this scheduler was built without an Eligibility")

        async def eligible() -> Candidates:
            await recheck()
            return await eligibility.candidates(
                request.group_id, request.model, request.providers, request.user_id
            )

        return await self.acquire(request, eligible)

    async def fail_over(self, failed: Grant, request: RouteRequest, recheck: Recheck) -> Grant:
        """:meth:`move` with the scheduler's :class:`Eligibility` (as :meth:`route` is :meth:`acquire`)."""
        eligibility = self.eligibility
        if eligibility is None:
            raise RuntimeError("this scheduler was built without an Eligibility")

        async def eligible() -> Candidates:
            await recheck()
            return await eligibility.candidates(
                request.group_id, request.model, request.providers, request.user_id
            )

        return await self.move(failed, request, eligible)

    async def move(self, failed: Grant, request: RouteRequest, eligible: Eligible) -> Grant:
        """FAIL-1/2: leave ``failed``'s account and take a slot on another of ``eligible()``'s.

        The failed slot is given back first (one lease at a time), and a binding it made is taken
        back, so the conversation binds only where it is answered. The admission ticket carries
        over: one logical request is admitted once (its RPM allowance used once, its member slot
        kept). ``request.exclude`` names every account tried so far. On any refusal the ticket is
        closed and the error raised; the caller answers with the failed attempt's own error.
        """
        failed.lease.release("error")
        try:
            await self.forget_binding(failed)
            return await self._select(request, _without_tried(request, eligible), failed.ticket)
        except BaseException:
            failed.ticket.close()
            raise

    async def forget_binding(self, grant: Grant) -> None:
        """Take back the binding ``grant`` made, if it still points at its account (FAIL-2)."""
        if grant.made_binding is not None:
            digest, grant.made_binding = grant.made_binding, None
            await self.affinity.forget(digest, grant.account.id)

    async def acquire(self, request: RouteRequest, eligible: Eligible) -> Grant:
        """Admit, select among ``eligible()``'s candidates, and take a slot (waiting when needed)."""
        shared = self.shared
        if shared is None:
            ticket = self.admission.enter(request.user_id, request.member_limit, request.rpm)
            try:
                return await self._select(request, _without_tried(request, eligible), ticket)
            except BaseException:
                ticket.close()
                raise
        # Workspace capacity per replica; the member's limits across replicas (SCALE-2), asked of
        # Redis with the request's first slot (issue #49).
        ticket = self.admission.enter(request.user_id, 0, 0)
        if not (request.member_limit or request.rpm):
            try:
                return await self._select(request, _without_tried(request, eligible), ticket)
            except BaseException:
                ticket.close()
                raise
        admitting = Admitting(ticket, request.user_id, shared.new_id(), request.member_limit, request.rpm)
        self._admitting[id(request)] = admitting
        try:
            return await self._select(request, _without_tried(request, eligible), ticket)
        except SubLaneError as error:
            if not admitting.sent:  # refused before any slot was asked for
                await self._admit_before_refusing(shared, admitting)
            elif error.code in ("member_busy", "member_rate_limited"):
                error.routing = None  # refused at the door, as in one process (no routing)
            ticket.close()
            raise
        except BaseException:
            ticket.close()
            raise
        finally:
            self._admitting.pop(id(request), None)

    async def _admit_before_refusing(self, shared: SharedSlots, admitting: Admitting) -> None:
        """A request refused before it asked for a slot is counted against the member's limits all
        the same, and their refusal comes first, as in one process (the admission precedes the
        selection there)."""
        try:
            await shared.admit_pending(admitting)
        except SubLaneError:
            admitting.ticket.close()
            raise

    async def _select(self, request: RouteRequest, eligible: Eligible, ticket: Ticket) -> Grant:
        """Select and take a slot; a refusal carries the explanation of the routing that refused it
        (HIST-12: also stored for requests refused during routing)."""
        explanation: dict[str, Any] = {"excluded": {}}

        async def explained_eligible() -> Candidates:
            try:
                return await eligible()
            except SubLaneError as error:
                if error.code == "model_not_allowed":  # the group's policy, re-checked (WAIT-5)
                    excluded = explanation.setdefault("excluded", {})
                    excluded["policy"] = len(self.directory.of_group(request.group_id))
                raise

        try:
            return await self._choose(request, explained_eligible, ticket, explanation)
        except SubLaneError as error:
            if error.routing is None:
                explanation.setdefault("rule", "none")
                explanation.setdefault("candidates", 0)
                explanation["refused"] = error.code
                error.routing = explanation
            raise

    async def _choose(
        self, request: RouteRequest, eligible: Eligible, ticket: Ticket, explanation: dict[str, Any]
    ) -> Grant:
        deadline = self.clock.monotonic() + self.wait_timeout_s
        digest = (
            binding_digest(request.group_id, request.conversation_key) if request.conversation_key else None
        )
        await self.directory.refresh()
        waited_since: float | None = None  # when the call first waited in the queue (PAID-2)
        while True:
            candidates = await eligible()
            ids = {account.id for account in candidates.accounts}
            binding = await self.affinity.binding(digest) if digest else None
            bound_id, bound_model = binding if binding is not None else (None, None)
            routing: dict[str, Any] = {"excluded": dict(candidates.excluded)}
            explanation.clear()
            explanation.update(routing)
            routing = explanation  # the same dict: a refusal below carries what was decided so far
            metered = candidates.metered
            released = bound_id is not None and (
                self._binding_released(bound_id, request.group_id)
                or (metered is not None and bound_id in metered.off)  # PAID-2: `off` lets it go
            )
            if released:
                # OPS-5: the account was deleted, disabled or left the group: select anew (and bind
                # the new choice below, replacing the old binding).
                bound_id = bound_model = None
            if bound_id is not None and self.directory.get(bound_id) is not None:
                account = self.directory.get(bound_id)
                assert account is not None
                if bound_id in ids:
                    routing["rule"] = "kept_binding"
                    exhausted = candidates.quota.get(bound_id)
                    if exhausted is not None:  # QUOTA-7: never moves, never waits, no failure counted
                        self._count(routing, "quota")
                        routing["candidates"] = 1
                        raise self._quota_error(exhausted)
                    if metered is not None and account.billing is Billing.METERED:
                        self._bound_metered(request, metered, routing)  # AFF-3: it stays bound
                    lease = await self._bound_slot(account, request, routing)
                    pool = [account]
                elif (
                    request.continuation
                    or bound_model == request.model
                    or not candidates.accounts
                    or not (account.enabled and account.auth_ok)
                ):
                    # AFF-3, CRED-7: health never moves a conversation; only a switch to a model the
                    # bound account does not serve may (AFF-4), never the same model.
                    raise self._bound_unavailable(account, request)
                else:  # AFF-4: a portable history may move to an account that serves the new model
                    routing["rule"] = "model_switch_rotation"
                    lease, pool = await self._rotate(
                        request,
                        candidates,
                        routing,
                        waited_since is not None and self._overflowed(metered, waited_since),
                    )
            else:
                if not candidates.accounts:
                    raise self._told_unavailable(request, self._no_candidates(request, candidates))
                preferred = (
                    await self._parent_slot(request, candidates, routing)
                    if request.parent_key is not None
                    else None
                )
                if preferred is not None:
                    lease, pool = (
                        preferred,
                        [account for account in candidates.accounts if account.id == preferred.account_id],
                    )
                    routing["rule"] = "parent_preference"
                else:
                    routing["rule"] = "binding_released" if released else "uniform_rotation"
                    lease, pool = await self._rotate(
                        request,
                        candidates,
                        routing,
                        waited_since is not None and self._overflowed(metered, waited_since),
                    )
                    if routing.get("rotation") == "quota_weighted" and not released:
                        routing["rule"] = "quota_weighted_rotation"
            routing["candidates"] = len(pool)
            if lease is None:
                now = self.clock.monotonic()
                remaining = deadline - now
                if remaining <= 0 or not request.wait:
                    raise SubLaneError("account_wait_timeout", retry_after=1)
                if waited_since is None:
                    waited_since = now
                timeout = remaining
                if metered is not None and routing["excluded"].get("metered_held"):
                    # PAID-2: wake when the call has waited ``overflow_after_s``, to be offered
                    # the metered accounts then (or at the deadline, whichever comes first)
                    timeout = min(remaining, max(0.0, waited_since + metered.overflow_after_s - now))
                waiter = self.room.enter(
                    request.group_id, (a.id for a in pool), request.request_id, request.model
                )
                try:
                    if self.shared is None:
                        lease = await wait_for_lease(self.room, waiter, timeout)
                    else:
                        lease = await self._wait_shared(self.shared, waiter, pool, request, timeout)
                except Reconsider:
                    continue  # WAIT-9: the account began cooling while this request waited
                except SubLaneError as error:
                    if timeout < remaining and error.code == "account_wait_timeout":
                        continue  # PAID-2: the overflow moment, not the deadline: decide again
                    raise
                waited = True
            else:
                waited = False
            # The request holds a slot from here on. Whatever ends it before the grant is handed out
            # (a re-check that raises, a cancellation, a failed binding write) gives the slot back.
            try:
                if waited and (
                    lease.account_id not in {a.id for a in pool}
                    or not await self._still_fine(lease, eligible, request, waited_since)
                ):
                    lease.release("rejected")  # WAIT-5: things changed while waiting; decide again
                    continue
                account = self.directory.get(lease.account_id)
                assert account is not None
                made_binding = digest if digest is not None and bound_id != account.id else None
                if digest is not None and (bound_id != account.id or bound_model != request.model):
                    await self.affinity.bind(
                        digest, request.group_id, account.id, request.model, request.user_id
                    )
            except BaseException as exc:
                lease.release("canceled" if isinstance(exc, asyncio.CancelledError) else "rejected")
                raise
            if metered is not None:
                self._note_metered(account, routing)
            return Grant(
                lease=lease,
                account=account,
                revision=self.cooldowns.revision(account.id),
                routing=routing,
                bound=digest is not None,
                ticket=ticket,
                cooldowns=self.cooldowns,
                offer=self.offer,
                made_binding=made_binding,
            )

    async def _bound_slot(
        self, account: AccountInfo, request: RouteRequest, routing: dict[str, Any]
    ) -> Lease | None:
        cooldown = self.cooldowns.blocking(account.id, request.model)
        if cooldown is not None:  # WAIT-9: never waited on; the conversation stays bound (AFF-3)
            self._count(routing, "cooldown")
            routing["candidates"] = 1
            raise self._cooling_error(cooldown)
        if self.shared is None:
            lease = self.take(account, request.model, request.request_id)
        else:
            lease = await self._take_shared(self.shared, [account], request)
        if lease is None:
            self._count(routing, "capacity")
        return lease

    async def _parent_slot(
        self, request: RouteRequest, candidates: Candidates, routing: dict[str, Any]
    ) -> Lease | None:
        """A slot on the parent conversation's account (REVIEW-1/2), or ``None`` for normal selection.

        The parent's binding is looked up in the same group (the digest) and must have been made by
        the same user; its account must be a candidate (model, policy, health), neither out of quota
        nor cooling nor backing off, and have a free slot — a busy parent is not waited for. The
        parent's binding is only read, never changed (REVIEW-3).
        """
        assert request.parent_key is not None
        parent = await self.affinity.owned_binding(binding_digest(request.group_id, request.parent_key))
        if parent is None or parent[1] != request.user_id:
            routing["parent"] = "unknown"  # missing, expired, or another user's: never offered
            return None
        account = next((a for a in candidates.accounts if a.id == parent[0]), None)
        if (
            account is None
            or account.billing is Billing.METERED  # PAID-2: metered use is decided by rotation
            or account.id in candidates.quota
            or account.id in candidates.backing_off
            or self.cooldowns.blocking(account.id, request.model) is not None
        ):
            routing["parent"] = "unavailable"
            return None
        if self.shared is None:
            lease = self.take(account, request.model, request.request_id)
        else:
            lease = await self._take_shared(self.shared, [account], request)
        routing["parent"] = "preferred" if lease is not None else "busy"
        return lease

    def _binding_released(self, account_id: int, group_id: int) -> bool:
        account = self.directory.get(account_id)
        return account is None or not account.enabled or not self.directory.in_group(group_id, account_id)

    async def _rotate(
        self,
        request: RouteRequest,
        candidates: Candidates,
        routing: dict[str, Any],
        overflowed: bool = False,
    ) -> tuple[Lease | None, list[AccountInfo]]:
        metered = candidates.metered
        usable = (
            self._usable(request, candidates, routing)
            if metered is None
            else self._usable_metered(request, candidates, metered, routing, overflowed)
        )
        weights = self._weights(usable, candidates)
        routing["rotation"] = "uniform" if weights is None else "quota_weighted"
        shared = self.shared
        if shared is not None:
            lease = await self._rotate_shared(shared, request, usable, weights)
        elif weights is not None:

            def take(account: AccountInfo) -> Lease | None:
                return self.take(account, request.model, request.request_id)

            lease = self.rotation.acquire_weighted(request.group_id, usable, weights, take)
        else:
            lease = self.rotation.acquire(
                request.group_id,
                usable,
                lambda account: self.take(account, request.model, request.request_id),
            )
        if lease is None:
            self._count(routing, "capacity", len(usable))
        return lease, usable

    async def _rotate_shared(
        self,
        shared: SharedSlots,
        request: RouteRequest,
        usable: list[AccountInfo],
        weights: list[float] | None,
    ) -> Lease | None:
        """Rotation across replicas: uniform from the group's cursor in Redis; by quota from this
        replica's credits (each replica's share of selections tracks the weights)."""
        if weights is None:
            return await self._take_shared(shared, usable, request, rotate=True)
        order = self.rotation.weighted_order(request.group_id, usable, weights)
        lease = await self._take_shared(shared, [usable[index] for index in order], request)
        taken = None
        if lease is not None:
            taken = next(index for index in order if usable[index].id == lease.account_id)
        self.rotation.weighted_settle(request.group_id, usable, weights, taken)
        return lease

    async def _take_shared(
        self,
        shared: SharedSlots,
        accounts: list[AccountInfo],
        request: RouteRequest,
        *,
        rotate: bool = False,
        lease_id: str | None = None,
    ) -> Lease | None:
        """:meth:`take` across replicas: a slot on the first of ``accounts`` (or from the group's
        shared cursor on, ``rotate``) that admits one, in one Redis round trip. The rules are the
        same: each account's current limit, or one recovery probe after an account cooldown, or one
        request of a model past its cooldown (COOL-4, MCOOL-3) — counted over every replica."""
        plan: list[tuple[int, int]] = []
        model_caps: list[int] = []
        model = request.model
        for account in accounts:
            room = self._room(account, model)
            if room is not None:
                plan.append((account.id, room[0]))
                model_caps.append(room[1])
        lease_id = lease_id or shared.new_id()
        rotation = str(request.group_id) if rotate else None
        admitting = self._admitting.pop(id(request), None) if self._admitting else None
        if admitting is not None and not plan:  # nothing to ask a slot of: the admission alone
            await shared.admit_pending(admitting)
        elif admitting is not None:
            admitting.sent = True
            admission = (admitting.user_id, admitting.ticket_id, admitting.member_limit, admitting.rpm)
            try:
                taken = await shared.limits.admit_and_acquire(
                    admission, plan, lease_id, model=model, model_limits=model_caps, rotation=rotation
                )
            except asyncio.CancelledError:
                shared.abandon([account_id for account_id, _ in plan], lease_id, model)
                shared.drop_ticket(admitting.user_id, admitting.ticket_id, admitting.member_limit)
                raise
            except SubLaneError as error:
                if error.code != "member_busy":
                    raise
                # The member's place may be going back on another replica this moment: the
                # admission alone, with its grace, then the slot as usual.
                await shared.admit_pending(admitting)
            else:
                admitting.ticket.then = shared.admitted(
                    admitting.user_id, admitting.ticket_id, admitting.member_limit
                )
                return self._held(shared, taken, lease_id, request)
        try:
            taken = await shared.limits.acquire(
                plan, lease_id, model=model, model_limits=model_caps, rotation=rotation
            )
        except asyncio.CancelledError:
            shared.abandon([account_id for account_id, _ in plan], lease_id, model)
            raise
        return self._held(shared, taken, lease_id, request)

    def _held(
        self, shared: SharedSlots, taken: int | None, lease_id: str, request: RouteRequest
    ) -> Lease | None:
        """The local mirror of the slot Redis gave (``taken``: its account), or ``None``."""
        if taken is None:
            return None
        lease = self.leases.try_acquire(taken, _NO_LOCAL_LIMIT, request.request_id, request.model)
        assert lease is not None
        shared.held(lease, lease_id)
        return lease

    async def _wait_shared(
        self,
        shared: SharedSlots,
        waiter: Waiter,
        pool: list[AccountInfo],
        request: RouteRequest,
        timeout_s: float,
    ) -> Lease:
        """WAIT across replicas: queued in Redis on every account of ``pool`` (arrivals numbered
        there, so first come is first served over all replicas), asking again whenever a slot of
        one of them frees anywhere (pub/sub rings the waiter's bell), renewing its place every
        TTL/3 — a waiter whose replica dies is dropped. Timeout, cancellation, reconsidering and
        shutdown end it as in one process."""
        ids = [account.id for account in pool]
        waiter_id = shared.new_id()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                await shared.limits.enqueue(ids, waiter_id)
                while True:
                    waiter.bell = loop.create_future()  # before asking: a release meanwhile rings it
                    if waiter.future.done():
                        waiter.future.result()  # raises Reconsider or shutting_down
                    lease = await self._take_shared(shared, pool, request, lease_id=waiter_id)
                    if lease is not None:
                        return lease
                    try:
                        async with asyncio.timeout(shared.renew_every_s):
                            await waiter.bell
                    except TimeoutError:
                        await shared.limits.renew_waiting(ids, waiter_id)
        except TimeoutError:
            raise SubLaneError("account_wait_timeout", retry_after=1) from None
        finally:
            self.room.leave(waiter)
            if not waiter.future.done():
                waiter.future.cancel()
            shared.leave_queue(ids, waiter_id)

    def _usable(
        self, request: RouteRequest, candidates: Candidates, routing: dict[str, Any]
    ) -> list[AccountInfo]:
        """The candidates neither cooling, nor out of quota, nor backing off; none raises."""
        usable: list[AccountInfo] = []
        cooling: list[Cooldown] = []
        exhausted: list[float] = []  # when to look again, per account out of quota (QUOTA-3)
        backing_off: list[float] = []  # when each account's refresh may be tried again (AFF-8)
        for account in candidates.accounts:
            cooldown = self.cooldowns.blocking(account.id, request.model)
            if cooldown is not None:
                cooling.append(cooldown)
            elif account.id in candidates.quota:
                exhausted.append(candidates.quota[account.id])
            elif account.id in candidates.backing_off:
                backing_off.append(candidates.backing_off[account.id])
            else:
                usable.append(account)
        if cooling:
            self._count(routing, "cooldown", len(cooling))
        if exhausted:
            self._count(routing, "quota", len(exhausted))
        if backing_off:
            self._count(routing, "refresh_backoff", len(backing_off))
        if not usable:
            routing["candidates"] = 0
            raise self._told_unavailable(request, self._nothing_usable(cooling, exhausted, backing_off))
        return usable

    # -- metered accounts (PAID-2) ----------------------------------------------------------------

    def _overflowed(self, metered: MeteredCandidates | None, waited_since: float | None) -> bool:
        """Overflow: the call has waited the group's ``overflow_after_s`` in the queue."""
        return (
            metered is not None
            and waited_since is not None
            # a timer may fire a little early (the event loop's clock resolution)
            and self.clock.monotonic() - waited_since >= metered.overflow_after_s - _OVERFLOW_SLACK_S
        )

    def _usable_metered(
        self,
        request: RouteRequest,
        candidates: Candidates,
        metered: MeteredCandidates,
        routing: dict[str, Any],
        overflowed: bool,
    ) -> list[AccountInfo]:
        """:meth:`_usable` for a group with metered accounts: the subscription candidates as
        always, the metered ones when the group's routing offers them now (``normal``; ``overflow``
        when no subscription candidate can take the call or it waited long enough) and PAID-3's
        caps allow; their reason is noted as ``overflow_reason`` (kept only if one serves)."""
        usable: list[AccountInfo] = []  # in the candidates' order (AFF-6 ties)
        offered: list[AccountInfo] = []
        cooling: list[Cooldown] = []
        exhausted: list[float] = []
        backing_off: list[float] = []
        reasons: set[str] = set()  # why the subscription candidates are out
        subscriptions = 0
        for account in candidates.accounts:
            is_metered = account.billing is Billing.METERED
            if not is_metered:
                subscriptions += 1
            cooldown = self.cooldowns.blocking(account.id, request.model)
            if cooldown is not None:
                cooling.append(cooldown)
                reason = "cooldown"
            elif account.id in candidates.quota:
                exhausted.append(candidates.quota[account.id])
                reason = "quota"
            elif account.id in candidates.backing_off:
                backing_off.append(candidates.backing_off[account.id])
                reason = "refresh_backoff"
            else:
                (offered if is_metered else usable).append(account)
                continue
            if not is_metered:
                reasons.add(reason)
        if cooling:
            self._count(routing, "cooldown", len(cooling))
        if exhausted:
            self._count(routing, "quota", len(exhausted))
        if backing_off:
            self._count(routing, "refresh_backoff", len(backing_off))
        why: str | None
        if metered.routing is not MeteredRouting.OVERFLOW:
            why = NORMAL
        elif not usable:
            for tried in request.exclude:  # FAIL-1: the subscriptions this call already left
                left = self.directory.get(tried)
                if left is not None and left.billing is not Billing.METERED:
                    subscriptions += 1
                    cooling_now = self.cooldowns.blocking(tried, request.model) is not None
                    reasons.add("cooldown" if cooling_now else "tried")
            why = blocked_reason(reasons, subscriptions, metered.subscription_unavailable)
        elif overflowed:
            why = WAITED
        else:
            why = None
            if offered:
                self._count(routing, HELD, len(offered))
        refused: SubLaneError | None = None
        if why is not None and offered:
            refusal = metered.spend() if metered.spend is not None else None
            if refusal is not None:  # PAID-3: the caps keep the metered accounts out
                self._count(routing, excluded_by(refusal), len(offered))
                refused = spend_error(refusal, request.model, self.clock.time())
            else:
                routing["overflow_reason"] = why
                if metered.routing is MeteredRouting.NORMAL:
                    chosen = {account.id for account in offered}.union(a.id for a in usable)
                    usable = [account for account in candidates.accounts if account.id in chosen]
                else:  # subscription slots first, then the metered ones
                    usable += offered
        if not usable:
            routing["candidates"] = 0
            if refused is not None:  # the metered accounts would have served
                raise self._told_unavailable(request, refused)
            raise self._told_unavailable(request, self._nothing_usable(cooling, exhausted, backing_off))
        return usable

    def _bound_metered(
        self, request: RouteRequest, metered: MeteredCandidates, routing: dict[str, Any]
    ) -> None:
        """A conversation bound to a metered account keeps it (AFF-3), within PAID-3's caps: when
        they refuse, the matching error (the binding stays)."""
        refusal = metered.spend() if metered.spend is not None else None
        if refusal is not None:
            self._count(routing, excluded_by(refusal))
            routing["candidates"] = 0
            raise spend_error(refusal, request.model, self.clock.time())
        routing["overflow_reason"] = BOUND

    @staticmethod
    def _note_metered(account: AccountInfo, routing: dict[str, Any]) -> None:
        """HIST-12: a call served by a metered account says so, and why; a subscription's does not."""
        if account.billing is Billing.METERED:
            routing["metered"] = True
            routing.setdefault("overflow_reason", NORMAL)
        else:
            routing.pop("overflow_reason", None)

    def _nothing_usable(
        self, cooling: list[Cooldown], exhausted: list[float], backing_off: list[float]
    ) -> SubLaneError:
        """The error of an unbound request no candidate can serve now: the reason that ends first
        (a cooldown, a quota re-check, a refresh retry), its time as the hint."""
        ends: list[tuple[float, int]] = []
        if cooling:
            ends.append((min(c.until for c in cooling), 0))
        if exhausted:
            ends.append((min(exhausted), 1))
        if backing_off:
            ends.append((min(backing_off), 2))
        _, reason = min(ends)
        if reason == 0:
            return self._cooling_error(min(cooling, key=lambda c: c.until))
        if reason == 1:
            return self._quota_error(min(exhausted))
        retry_after = max(1.0, min(min(backing_off) - self.clock.time(), MAX_RETRY_AFTER_HINT_S))
        return SubLaneError(
            "account_refresh_failed",
            "Every account that serves this model is waiting to retry its credential refresh.",
            retry_after=retry_after,
        )

    @staticmethod
    def _weights(usable: list[AccountInfo], candidates: Candidates) -> list[float] | None:
        """QW-2: weights only when every candidate has a fresh, complete remaining fraction and all
        are of one provider; otherwise uniform rotation."""
        remaining = candidates.remaining
        if remaining is None or len(usable) < 2 or len({a.provider for a in usable}) != 1:
            return None
        weights = [remaining.get(account.id) for account in usable]
        if any(weight is None for weight in weights):
            return None
        return [weight for weight in weights if weight is not None]

    @staticmethod
    def _count(routing: dict[str, Any], reason: str, count: int = 1) -> None:
        excluded: dict[str, int] = routing["excluded"]
        excluded[reason] = excluded.get(reason, 0) + count

    async def _still_fine(
        self, lease: Lease, eligible: Eligible, request: RouteRequest, waited_since: float | None
    ) -> bool:
        candidates = await eligible()
        if lease.account_id not in {account.id for account in candidates.accounts}:
            return False
        if lease.account_id in candidates.quota:  # WAIT-5: ran out of quota while this one waited
            return False
        if self.cooldowns.blocking(lease.account_id, lease.model) is not None:
            return False
        metered = candidates.metered
        if metered is None:
            return True
        return self._metered_still_offered(lease, request, candidates, metered, waited_since)

    def _metered_still_offered(
        self,
        lease: Lease,
        request: RouteRequest,
        candidates: Candidates,
        metered: MeteredCandidates,
        waited_since: float | None,
    ) -> bool:
        """WAIT-5 for PAID-2: a metered slot handed to a waiter is kept only if the group's routing
        still offers the metered accounts to it now (a subscription account may have recovered
        while it waited for the metered one)."""
        account = self.directory.get(lease.account_id)
        if account is None or account.billing is not Billing.METERED:
            return True
        try:
            usable = self._usable_metered(
                request, candidates, metered, {"excluded": {}}, self._overflowed(metered, waited_since)
            )
        except SubLaneError:
            return False
        return any(candidate.id == lease.account_id for candidate in usable)

    def check_dispatch(self, account_id: int, model: str) -> None:
        """Before a retry on the same lease (RETRY-2): raise when the account began cooling or a
        fresh observation says it is out of quota for ``model`` (QUOTA-7)."""
        cooldown = self.cooldowns.blocking(account_id, model)
        if cooldown is not None:
            raise self._cooling_error(cooldown)
        quota = self.eligibility.quota if self.eligibility is not None else None
        until = quota.exhausted_until(account_id, model) if quota is not None else None
        if until is not None:
            raise self._quota_error(until)

    def _told_unavailable(self, request: RouteRequest, error: SubLaneError) -> SubLaneError:
        """``error``, once observers (alerts) learned that the group's pool could not serve the
        model now. (Returned, not kept in a local: a raised error held by its own frame is a
        reference cycle.)"""
        if error.code != "model_not_found" and signals.pool_unavailable.has_receivers:
            signals.pool_unavailable.send(
                signals.PoolUnavailable(group_id=request.group_id, model=request.model, reason=error.code),
                sender=self,
            )
        return error

    @staticmethod
    def _no_candidates(request: RouteRequest, candidates: Candidates) -> SubLaneError:
        if candidates.excluded.get("unavailable"):
            return SubLaneError(
                "no_account_available", f"No account that serves {request.model!r} is available now."
            )
        if candidates.excluded.get("metered_off"):  # PAID-2: the admin's routing, not a missing model
            return SubLaneError(
                "model_not_found",
                f"Only metered (API-key) accounts of your group serve {request.model!r}, and the "
                "group's metered routing is off.",
            )
        return SubLaneError("model_not_found", f"No account in your group serves {request.model!r}.")

    def _quota_error(self, until: float) -> SubLaneError:
        """403 ``quota_exhausted`` with a re-check hint: the observation's freshness deadline or
        its reset, whichever comes first (QUOTA-7) — a hint, not a promise."""
        retry_after = max(1.0, min(until - self.clock.time(), MAX_RETRY_AFTER_HINT_S))
        return SubLaneError("quota_exhausted", retry_after=retry_after)

    def _cooling_error(self, cooldown: Cooldown) -> SubLaneError:
        # AGL-3: a limit held here answers ``model_cooling`` whether it began as our own cooldown
        # or as the provider's limit; only the relayed upstream answer is ``model_rate_limited``.
        code = "account_cooling" if cooldown.model == "" else "model_cooling"
        return SubLaneError(code, retry_after=self.cooldowns.retry_after(cooldown))

    def _bound_unavailable(self, account: AccountInfo, request: RouteRequest) -> SubLaneError:
        if not account.enabled or not account.auth_ok:
            return SubLaneError(
                "no_account_available", "The account this conversation is bound to is not available now."
            )
        return SubLaneError(
            "model_not_found", f"The account this conversation is bound to does not serve {request.model!r}."
        )


#: How early the overflow moment may be noticed (a timer's wake-up precedes its deadline by up to
#: the event loop's clock resolution).
_OVERFLOW_SLACK_S = 0.001

#: The local mirror of a shared slot is never refused: Redis has decided.
_NO_LOCAL_LIMIT = 1 << 30


def _without_tried(request: RouteRequest, eligible: Eligible) -> Eligible:
    """``eligible`` less the accounts ``request`` already tried (FAIL-1), counted as ``tried``."""
    if not request.exclude:
        return eligible

    async def untried() -> Candidates:
        return (await eligible()).without(request.exclude, "tried")

    return untried
