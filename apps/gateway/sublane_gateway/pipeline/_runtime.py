"""Everything the request pipeline needs while it runs, created once per app.

The runtime holds the provider adapters by name (from the registry), the scheduler with its
eligibility, the credential vault, the model catalogue and the quota observer (whose background
reads it wires to the adapters' ``read_quota``, inside the workspace capacity). It listens to the
management signals that invalidate its caches; upstream outcomes reach the scheduler by direct
calls on the lease (:class:`~sublane_scheduler.Grant`), and the runtime is the sender of the
events it emits, so observers of one app never see another app's events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from sqlalchemy.engine import Connection, Engine
from starlette.requests import HTTPConnection

from sublane_core import AlertOutbox, Clock, CredentialCipher, Settings, account_ref, group_ref, signals
from sublane_gateway.pipeline._alerts import Deliverer
from sublane_gateway.pipeline._aliases import GroupAliases, default_aliases
from sublane_gateway.pipeline._background import BackgroundTasks
from sublane_gateway.pipeline._cache_turns import ConversationTurns, turn_of
from sublane_gateway.pipeline._catalog import ModelCatalog
from sublane_gateway.pipeline._client_versions import ClientVersions
from sublane_gateway.pipeline._cooldown_store import CooldownStore
from sublane_gateway.pipeline._keys import KeyAuthenticator
from sublane_gateway.pipeline._serving import ServingProviders
from sublane_gateway.pipeline._tracing import Tracing, tracing_from_environment
from sublane_gateway.pipeline._upstream_watch import UNWATCHED, ProviderWatch, UpstreamWatch
from sublane_history import TokenBudgets
from sublane_providers import (
    AliasesModels,
    CredentialVault,
    HasClientIdentity,
    ProviderAdapter,
    UpstreamClients,
    WrapsEvents,
    build_adapters,
    provider_billing,
    use_egress,
)
from sublane_quota import QuotaObserver, QuotaReader
from sublane_scheduler import (
    AccountDirectory,
    Admission,
    AffinityStore,
    CooldownBook,
    CooldownPolicy,
    Eligibility,
    LeaseTable,
    Scheduler,
    WaitRoom,
)

if TYPE_CHECKING:  # redis-py is imported only by a replica given SUBLANE_REDIS_URL
    from sublane_gateway.pipeline._coordination import Coordination

_log = logging.getLogger("sublane.gateway")

#: ALERT-2: ``pool.unavailable`` at most once per group and model in this time.
POOL_ALERT_EVERY_S = 600.0
#: How soon this replica asks the database again when the event was not told (another told it).
POOL_ALERT_RECHECK_S = 10.0

Change = signals.AccountChange


# A signal sender: its receivers are cached by weak reference to it, so it hashes by identity.
@dataclass(slots=True, weakref_slot=True, eq=False)
class ClientRuntime:
    """Process-wide state of the client API."""

    settings: Settings
    clock: Clock
    http: UpstreamClients
    keys: KeyAuthenticator
    directory: AccountDirectory
    leases: LeaseTable
    scheduler: Scheduler
    cooldown_store: CooldownStore
    vault: CredentialVault
    catalog: ModelCatalog
    adapters: dict[str, ProviderAdapter]
    serving: ServingProviders  # which adapters can serve a call, remembered for this runtime
    #: Each provider's event unwrapper (``WrapsEvents``), or ``None``: asked once, not per call.
    unwrappers: dict[str, Callable[[dict[str, Any]], dict[str, Any]] | None]
    aliases: GroupAliases  # ALIAS-1: every group's model aliases
    outbox: AlertOutbox  # ALERT-2: where state changes write their alerts
    budgets: TokenBudgets | None = None  # TEAM-4; None while usage summaries are off
    quota: QuotaObserver | None = None  # QUOTA; None while quota observation is off
    tracing: Tracing | None = None  # OPS-12; None unless an OTLP endpoint is configured
    alerts: Deliverer | None = None  # ALERT-4: sends the webhook outbox
    coordination: Coordination | None = None  # SCALE-2: the other replicas, through Redis
    #: COST-4: each conversation's previous turn, to tell why a turn missed the prompt cache.
    cache_turns: ConversationTurns = field(default_factory=ConversationTurns)
    #: CLIENT-2: every provider's effective client version (providers with a client identity).
    client_versions: ClientVersions | None = None
    watch: UpstreamWatch | None = None  # CLIENT-7: what upstreams answer that SubLane does not know
    _engine: Engine | None = None  # where a replica reads what another told it changed
    _pool_told_at: dict[tuple[int | None, str], float] = field(default_factory=dict)
    #: EGRESS-2: the last failure of each account's egress proxy (time, what failed), until it works.
    egress_errors: dict[int, tuple[float, str]] = field(default_factory=dict)
    _disconnects: list[Callable[[], None]] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _tasks: BackgroundTasks = field(default_factory=BackgroundTasks)

    async def start(self) -> None:
        """Load persisted runtime state and listen to the signals (inside the app's event loop)."""
        self._loop = asyncio.get_running_loop()
        await self.cooldown_store.restore(self.scheduler.cooldowns)
        if self.quota is not None:
            await self.quota.start()  # QUOTA-8: observations survive a restart
        coordination = self.coordination
        versions = self.client_versions
        if versions is not None:  # CLIENT-2: persisted, and shared with the other replicas
            await anyio.to_thread.run_sync(versions.load)
            versions.in_background = lambda work: self._background(anyio.to_thread.run_sync, work)
            if coordination is not None:
                versions.on_changed = lambda provider: coordination.publish(
                    "client_versions", provider=provider
                )
        if coordination is not None:
            coordination.on_released = self.scheduler.offer
            coordination.on_event = self._remote_event
            coordination.on_resync = self._resync
            self.cache_turns.on_stored = coordination.publish_cache_turn
            await coordination.start()
        self.connect_signals()
        if self.watch is not None:
            self.watch.start()
        if self.alerts is not None:
            self.outbox.on_added = self.poke_alerts
            self.alerts.start()

    def watch_of(self, provider: str | None) -> ProviderWatch:
        """CLIENT-7: what ``provider``'s upstream is known to answer, and where news goes."""
        watch = self.watch
        return watch.providers.get(provider or "", UNWATCHED) if watch is not None else UNWATCHED

    def egress_failed(self, account_id: int, what: str) -> None:
        """EGRESS-2: the account's proxy failed (shown in its runtime view; no cooldown)."""
        self.egress_errors[account_id] = (self.clock.time(), what[:200])

    def egress_worked(self, account_id: int) -> None:
        """A call through the account's proxy went through: its last failure is history."""
        self.egress_errors.pop(account_id, None)

    async def _egress_changed(self, account_id: int) -> None:
        """EGRESS-1: the account's next calls use its new proxy; the old proxy's pools close when
        no other account uses it."""
        previous = await self.vault.egress_changed(account_id)
        self.egress_errors.pop(account_id, None)
        if previous is not None and previous not in self.vault.egresses():
            await self.http.close_egress(previous)  # only accounts loaded here can have its pools

    def _pool_unavailable(self, payload: signals.PoolUnavailable) -> None:
        """ALERT-2 ``pool.unavailable``: a group had no eligible account for a model — told at most
        once per group and model in 10 minutes over every replica (ALERT-6: the database decides,
        ``once_per``), written right after, in the background. This replica asks the database again
        for a group and model at most every :data:`POOL_ALERT_RECHECK_S` when it was not told."""
        alerts = self.alerts
        if alerts is None:
            return
        now = self.clock.time()
        group_id, model = payload.group_id, payload.model
        told = self._pool_told_at.get((group_id, model))
        if told is not None and now - told < POOL_ALERT_EVERY_S:
            return
        self._pool_told_at[(group_id, model)] = now

        def describe(connection: Connection) -> dict[str, Any]:
            return {"group": group_ref(connection, group_id), "model": model, "reason": payload.reason}

        async def tell() -> None:
            once_per = (f"pool.unavailable:{group_id}:{model}", POOL_ALERT_EVERY_S)
            if await alerts.raise_event("pool.unavailable", describe, once_per=once_per) is None:
                # told by another replica, or no webhook wanted it: look again a little later
                self._pool_told_at[(group_id, model)] = now - POOL_ALERT_EVERY_S + POOL_ALERT_RECHECK_S

        self._background(tell)

    def _version_refused(self, payload: signals.ClientVersionRefused) -> None:
        """CLIENT-3 → CLIENT-7: a refused client version is listed with the upstream changes
        (kind ``client_version``, named by the version the upstream or catalogue asked for)."""
        if self.watch is not None:
            needed = payload.needed or f"newer than {payload.carried or 'unknown'}"
            self.watch.client_version_refused(payload.provider, needed, payload.request_id)

    def _refresh_failing(self, payload: signals.RefreshFailing) -> None:
        """ALERT-2 ``account.refresh_failing`` (the third refresh failure in a row, in-memory state):
        written in the background, never on the path of the request whose refresh failed."""
        alerts = self.alerts
        if alerts is None:
            return
        account_id = payload.account_id

        def describe(connection: Connection) -> dict[str, Any]:
            account = account_ref(connection, account_id)
            return {"account": account, "failures": payload.failures, "reason": payload.reason[:64]}

        self._background(alerts.raise_event, "account.refresh_failing", describe)

    def poke_alerts(self) -> None:
        """Events were queued (from any thread): deliver them now, not at the next poll."""
        alerts = self.alerts
        if alerts is not None:
            self._on_loop(alerts.poke)

    def _on_loop(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` on the event loop: management routes send signals from worker threads."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            callback()
        else:
            loop.call_soon_threadsafe(callback)

    def apply_account_change(self, payload: signals.AccountChanged) -> None:
        """Bring the caches in line with a change to an account (on the event loop)."""
        scheduler = self.scheduler
        self.directory.invalidate()
        change = payload.change
        if change in (Change.DELETED, Change.REAUTHORIZED, Change.ENABLED, Change.DISABLED):
            # only a new lifecycle drops the cached credentials: forgetting them on a rename
            # or a new limit while a refresh runs would start a second refresh with the
            # refresh token the first is rotating (CRED-1: one refresh at a time)
            self.vault.forget(payload.account_id)
            self.catalog.forget(payload.account_id)
        if change in (Change.REAUTHORIZED, Change.ENABLED, Change.DISABLED):
            scheduler.cooldowns.clear_model_limits(payload.account_id)  # AGL-2
            if self.quota is not None:  # QUOTA-8: a new lifecycle; Clear cooldown is not one
                self.quota.invalidate(payload.account_id, payload.lifecycle_revision)
        if change is Change.DELETED:
            scheduler.cooldowns.forget(payload.account_id)
            scheduler.affinity.forget_account(payload.account_id)
            if self.quota is not None:
                self.quota.forget(payload.account_id)
        if change is Change.LIMITS:
            self._background(self._limits_changed, payload.account_id)
        if change is Change.EGRESS:
            self._background(self._egress_changed, payload.account_id)
        if change in (Change.CREATED, Change.REAUTHORIZED, Change.ENABLED):
            # CAT-1: the catalogue is discovered right away, in the background, under the
            # metadata rules (workspace capacity, two at a time), not on the first call
            self._background(self._discover, payload.account_id)

    def apply_access_change(self) -> None:
        self.keys.invalidate()
        self.directory.invalidate()
        self.aliases.invalidate()  # a group changed (or went): its aliases too

    def connect_signals(self) -> None:
        """Keep caches true to the database (management changes arrive as signals)."""
        scheduler = self.scheduler
        coordination = self.coordination

        def on_account(payload: signals.AccountChanged) -> None:
            self._on_loop(lambda: self.apply_account_change(payload))
            if coordination is not None:  # SCALE-2: the other replicas apply it too
                coordination.publish(
                    "account",
                    account_id=payload.account_id,
                    change=payload.change.value,
                    lifecycle_revision=payload.lifecycle_revision,
                    max_concurrency=payload.max_concurrency,
                )

        def on_access(payload: signals.AccessChanged) -> None:
            self._on_loop(self.apply_access_change)
            if coordination is not None:
                coordination.publish("access")

        def on_rejected(payload: signals.CredentialsRejected) -> None:
            self._on_loop(self.directory.invalidate)  # its stored auth state changed
            if coordination is not None:
                coordination.publish("credentials", account_id=payload.account_id)

        if self.quota is not None:  # response headers and stream events (QUOTA-2)
            self._disconnects.append(signals.quota_observed.connect(self.quota.observe, sender=self))
        if coordination is not None:

            def on_refreshed(payload: signals.CredentialsRefreshed) -> None:
                coordination.publish("credentials", account_id=payload.account_id)

            self._disconnects.append(signals.credentials_refreshed.connect(on_refreshed))
        self._disconnects += [
            signals.credentials_rejected.connect(on_rejected),
            signals.pool_unavailable.connect(self._pool_unavailable, sender=scheduler),
            signals.refresh_failing.connect(self._refresh_failing, sender=self.vault),
            signals.client_version_refused.connect(self._version_refused, sender=self),
            signals.account_changed.connect(on_account),
            signals.access_changed.connect(on_access),
        ]
        if self.client_versions is not None:  # refusals told by a call identity without a call
            self._disconnects.append(
                signals.client_version_refused.connect(self._version_refused, sender=self.client_versions)
            )

    # -- other replicas (SCALE-2) --------------------------------------------------------------------

    def _remote_event(self, event: dict[str, Any]) -> None:
        """Another replica's change, applied as this replica applies its own."""
        kind = event.get("kind")
        if kind == "account":
            self.apply_account_change(
                signals.AccountChanged(
                    account_id=int(event["account_id"]),
                    change=Change(event["change"]),
                    lifecycle_revision=int(event["lifecycle_revision"]),
                    max_concurrency=event.get("max_concurrency"),
                )
            )
        elif kind == "access":
            self.apply_access_change()
        elif kind == "credentials":  # refreshed or rejected there: read them again when next needed
            self.directory.invalidate()
            self.vault.forget(int(event["account_id"]))
        elif kind == "usage" and self.budgets is not None:  # TEAM-4 budgets over every replica
            self.budgets.add(
                int(event["user_id"]),
                event.get("group_id"),
                str(event["model"]),
                float(event["started_at"]),
                int(event["tokens"]),
                float(event["cost"]) if event.get("cost") is not None else None,  # COST-5
            )
        elif kind == "budget_rules" and self.budgets is not None and self._engine is not None:
            self._background(anyio.to_thread.run_sync, self.budgets.load, self._engine, int(event["user_id"]))
        elif kind == "cache_turn":  # COST-4: a conversation's turn served on another replica
            self.cache_turns.apply(*turn_of(event))
        elif kind == "binding":  # AFF: a conversation bound, moved or released on another replica
            self.scheduler.affinity.evict(str(event["digest"]))
        elif kind == "failure":  # MCOOL-2 counted over every replica
            self.scheduler.cooldowns.note_failure(
                int(event["account_id"]), str(event["model"]), float(event["at"])
            )
        elif kind == "failures_cleared":
            self.scheduler.cooldowns.clear_failures(int(event["account_id"]), str(event["model"]))
        elif kind == "quota" and self.quota is not None:
            from sublane_gateway.pipeline._coordination import quota_observation

            self.quota.apply_saved(quota_observation(event))
        elif kind == "client_versions" and self.client_versions is not None:  # CLIENT-2
            self._background(anyio.to_thread.run_sync, self.client_versions.load)
        elif kind == "cooldown":
            from sublane_gateway.pipeline._coordination import cooldown_of

            cooldown, account_id, model, revision = cooldown_of(event)
            self.scheduler.cooldowns.apply(cooldown, account_id, model, revision)
            self.scheduler.offer(account_id)  # cooling: its waiters decide again; ended: they may fit

    def _resync(self) -> None:
        """Events from the others may have been missed: reload everything cached from the database."""
        self.apply_access_change()
        self.scheduler.affinity.evict_all()
        for account_id in list(self.vault.loaded()):
            self.vault.forget(account_id)
        self._background(self.cooldown_store.restore, self.scheduler.cooldowns)
        if self.client_versions is not None:
            self._background(anyio.to_thread.run_sync, self.client_versions.load)

    def share_budgets(self, budgets: TokenBudgets, engine: Engine) -> None:
        """TEAM-4 across replicas: the tokens of members who have budget rules and every change of
        rules are published; a replica told of new rules reads that member's usage anew."""
        self.budgets, self._engine = budgets, engine
        coordination = self.coordination
        if coordination is None:
            return

        def noted(
            user_id: int, group_id: int | None, model: str, started_at: float, tokens: int, cost: float | None
        ) -> None:
            coordination.publish(
                "usage",
                urgent=False,
                user_id=user_id,
                group_id=group_id,
                model=model,
                started_at=started_at,
                tokens=tokens,
                cost=cost,
            )

        budgets.on_noted = noted
        budgets.on_rules_set = lambda user_id: coordination.publish("budget_rules", user_id=user_id)

    @property
    def background_work(self) -> int:
        """Work started by management changes and still running (catalogue reads, limit wake-ups)."""
        return len(self._tasks)

    def _background(self, work: Callable[..., Awaitable[object]], *args: Any) -> None:
        self._tasks.start(work, *args)

    async def _discover(self, account_id: int) -> None:
        """Discover a new, re-authorized or enabled account's catalogue (its failure is only logged:
        the first call that needs the catalogue asks again, CAT-1)."""
        try:
            await self.directory.refresh()
            account = self.directory.get(account_id)
            if account is not None and account.enabled:
                await self.catalog.refresh(account_id, account.provider)
        except Exception as exc:
            _log.info(
                "model discovery after a change of account %s failed: %s", account_id, type(exc).__name__
            )

    async def _limits_changed(self, account_id: int) -> None:
        await self.directory.refresh()
        self.scheduler.limits_changed(account_id)

    async def close(self) -> None:
        self.scheduler.room.close()  # waiters end at once with shutting_down (WAIT-6)
        self.cooldown_store.flush()
        if self.coordination is not None:
            await self.coordination.close()  # the slots still held go back; the rest expire
        for disconnect in self._disconnects:
            disconnect()
        self._disconnects.clear()
        await self._tasks.close()  # work started by changes ends (its database threads returned)
        if self.quota is not None:
            await self.quota.close()  # running reads end; queued writes finish
        if self.tracing is not None:
            self.tracing.shutdown()  # the last spans are exported
        if self.watch is not None:
            await self.watch.close()  # what was noted is stored (and alerted) before the outbox stops
        if self.alerts is not None:
            await self.alerts.close()  # pending deliveries stay in the outbox for the next start
        await self.http.aclose()


def default_egress(settings: Settings) -> str | None:
    """``SUBLANE_EGRESS_PROXY``: the proxy of accounts without their own (EGRESS-1)."""
    return settings.egress_proxy.get_secret_value() if settings.egress_proxy is not None else None


def build_runtime(
    settings: Settings, engine: Engine, cipher: CredentialCipher, clock: Clock
) -> ClientRuntime:
    """Create the runtime (call inside the app's lifespan: the HTTP clients belong to its loop)."""
    http = UpstreamClients(settings)
    adapters = build_adapters(settings, http, clock)
    leases = LeaseTable()
    coordination: Coordination | None = None
    if settings.redis_url is not None:
        from sublane_gateway.pipeline._coordination import Coordination

        coordination = Coordination(
            settings.redis_url.get_secret_value(),
            ttl_s=settings.lease_ttl,
            namespace=settings.redis_namespace,
        )
    outbox = AlertOutbox(settings.workspace_name, clock)  # ALERT-2: state changes write their events
    watch = UpstreamWatch(engine, clock, outbox, adapters)  # CLIENT-7
    vault = CredentialVault(
        engine,
        cipher,
        clock,
        adapters,
        fallback_providers=frozenset(name for name, adapter in adapters.items() if adapter.refresh_fallback),
        outbox=outbox,
        default_egress=default_egress(settings),
        gate=coordination.refresh_locks if coordination is not None else None,
    )
    directory = AccountDirectory(engine, provider_billing)  # PAID-2: accounts know their billing
    cooldown_store = CooldownStore(engine, clock, outbox)
    cooldowns = CooldownBook(
        clock,
        CooldownPolicy(
            fallback_s=settings.cooldown_fallback_s,
            model_threshold=settings.model_failure_threshold,
            model_window_s=settings.model_failure_window_s,
            model_initial_s=settings.model_cooldown_initial_s,
            model_max_s=settings.model_cooldown_max_s,
        ),
        persist=cooldown_store.save
        if coordination is None
        else coordination.saving_cooldowns(cooldown_store.save),
    )
    admission = Admission(clock, settings.workspace_capacity)
    # A metadata read's token must last as long as the read may (TIME-3), not CRED-1's 2 minutes.
    metadata_margin = float(settings.metadata_timeout_s)

    def discoverer(adapter: ProviderAdapter) -> Callable[[int], Awaitable[list[str]]]:
        async def discover(account_id: int) -> list[str]:
            # A metadata read: it counts against workspace capacity, never takes a model slot (ADM-10).
            ticket = admission.enter_metadata()
            try:
                credentials = await vault.get(account_id, adapter.name, margin=metadata_margin)
                with use_egress(credentials.egress):  # EGRESS-1: through the account's egress
                    models = await adapter.list_models(credentials.bundle)
            finally:
                ticket.close()
            watch.of(adapter.name).catalogue(models)  # CLIENT-7: a model SubLane does not know
            return models

        return discover

    async def read_quota(
        account_id: int, provider: str
    ) -> tuple[str | None, tuple[signals.QuotaWindow, ...]]:
        # A metadata read: workspace capacity, never a model slot, never clears a cooldown (ADM-10).
        ticket = admission.enter_metadata()
        try:
            credentials = await vault.get(account_id, provider, margin=metadata_margin)
            with use_egress(credentials.egress):  # EGRESS-1: through the account's egress
                return await adapters[provider].read_quota(credentials.bundle, clock.time())
        finally:
            ticket.close()

    reader: QuotaReader = read_quota
    if coordination is not None:  # SCALE-2: reads bounded over the replicas, observations shared
        reader = coordination.shared_reads(read_quota, most=2, life_s=metadata_margin + 5)
    quota = QuotaObserver(engine, clock, reader, outbox=outbox) if settings.quota_enabled else None
    catalog = ModelCatalog(
        clock,
        {name: discoverer(adapter) for name, adapter in adapters.items()},
        {
            name: adapter.model_aliases
            for name, adapter in adapters.items()
            if isinstance(adapter, AliasesModels)
        },
        engine=engine,
    )
    scheduler = Scheduler(
        clock=clock,
        directory=directory,
        leases=leases,
        cooldowns=cooldowns,
        affinity=AffinityStore(engine, clock),
        admission=admission,
        room=WaitRoom(settings.wait_queue_max),
        wait_timeout_s=settings.wait_timeout_s,
        eligibility=Eligibility(directory, catalog, vault, quota, weighted=settings.gateway_quota_weighted),
        shared=coordination.slots if coordination is not None else None,
    )
    if coordination is not None:  # SCALE-2: what the other replicas must hear of
        coordination.share(scheduler.cooldowns, scheduler.affinity, quota)
    return ClientRuntime(
        settings=settings,
        clock=clock,
        http=http,
        keys=KeyAuthenticator(engine, clock),
        directory=directory,
        leases=leases,
        scheduler=scheduler,
        cooldown_store=cooldown_store,
        vault=vault,
        catalog=catalog,
        adapters=adapters,
        serving=ServingProviders(adapters),
        unwrappers={
            name: adapter.unwrap_event if isinstance(adapter, WrapsEvents) else None
            for name, adapter in adapters.items()
        },
        quota=quota,
        aliases=GroupAliases(engine, default_aliases(adapters.values())),
        tracing=tracing_from_environment(),
        outbox=outbox,
        alerts=Deliverer(engine, cipher, clock, outbox, settings.alert_retry_s),
        coordination=coordination,
        client_versions=ClientVersions(
            engine,
            clock,
            {
                name: adapter.identity
                for name, adapter in adapters.items()
                if isinstance(adapter, HasClientIdentity)
            },
        ),
        watch=watch,
    )


def client_runtime(connection: HTTPConnection) -> ClientRuntime:
    """The :class:`ClientRuntime` of the app serving ``connection``.

    Read by key: Starlette's ``State`` answers an attribute only after a failed ordinary lookup,
    which makes and drops an ``AttributeError`` on every request (issue #19).
    """
    runtime: ClientRuntime = connection.app.state["client"]
    return runtime
