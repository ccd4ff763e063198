"""Everything the client API needs while it runs, created once per app and wired to the signals."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from starlette.requests import HTTPConnection

from sublane_core import Clock, CredentialCipher, Settings, signals
from sublane_gateway.client._catalog import ModelCatalog
from sublane_gateway.client._cooldown_store import CooldownStore
from sublane_gateway.client._keys import KeyAuthenticator
from sublane_gateway.client._transport import UpstreamClients
from sublane_providers import CredentialVault, ProviderAdapter
from sublane_providers.claude import ClaudeAdapter
from sublane_providers.codex import CodexAdapter
from sublane_scheduler import (
    AccountDirectory,
    Admission,
    AffinityStore,
    CooldownBook,
    CooldownPolicy,
    LeaseTable,
    Scheduler,
    WaitRoom,
)


@dataclass(slots=True)
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
    codex: CodexAdapter
    claude: ClaudeAdapter
    _disconnects: list[Callable[[], None]] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _tasks: set[asyncio.Future[None]] = field(default_factory=set)

    @property
    def adapters(self) -> dict[str, ProviderAdapter]:
        """The provider adapters by name."""
        return {"codex": self.codex, "claude": self.claude}

    async def start(self) -> None:
        """Load persisted runtime state and listen to the signals (inside the app's event loop)."""
        self._loop = asyncio.get_running_loop()
        await self.cooldown_store.restore(self.scheduler.cooldowns)
        self.connect_signals()

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

    def connect_signals(self) -> None:
        """Keep caches true to the database, and feed upstream outcomes to the cooldowns."""
        scheduler = self.scheduler

        def on_account(payload: signals.AccountChanged) -> None:
            def apply() -> None:
                self.directory.invalidate()
                self.vault.forget(payload.account_id)
                if payload.change in ("deleted", "reauthorized", "enabled", "disabled"):
                    self.catalog.forget(payload.account_id)
                if payload.change == "deleted":
                    scheduler.cooldowns.forget(payload.account_id)
                    scheduler.affinity.forget_account(payload.account_id)
                if payload.change == "limits":
                    task = asyncio.ensure_future(self._limits_changed(payload.account_id))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)

            self._on_loop(apply)

        def on_access(_payload: signals.AccessChanged) -> None:
            def apply() -> None:
                self.keys.invalidate()
                self.directory.invalidate()

            self._on_loop(apply)

        def ours() -> bool:
            """Upstream outcomes are sent on the event loop of the app that saw them; the signal bus
            is process-wide, so another app in this process (tests, tools) must not apply them."""
            try:
                return asyncio.get_running_loop() is self._loop
            except RuntimeError:
                return False

        def on_rate_limited(payload: signals.UpstreamRateLimited) -> None:
            if not ours():
                return
            if payload.model is None:
                scheduler.cooldowns.rate_limited(payload.account_id, payload.retry_after_s, payload.reason)
            else:
                scheduler.cooldowns.model_limited(
                    payload.account_id, payload.model, payload.retry_after_s, "provider:" + payload.reason
                )

        def on_failed(payload: signals.UpstreamFailed) -> None:
            if not ours():
                return
            scheduler.cooldowns.failed(payload.account_id, payload.model, payload.runtime_revision)

        def on_succeeded(payload: signals.UpstreamSucceeded) -> None:
            if not ours():
                return
            if scheduler.cooldowns.succeeded(payload.account_id, payload.model, payload.runtime_revision):
                scheduler.offer(payload.account_id)  # a proven account may take its waiters again

        def on_rejected(_payload: signals.CredentialsRejected) -> None:
            self._on_loop(self.directory.invalidate)  # its stored auth state changed

        self._disconnects += [
            signals.credentials_rejected.connect(on_rejected),
            signals.account_changed.connect(on_account),
            signals.access_changed.connect(on_access),
            signals.upstream_rate_limited.connect(on_rate_limited),
            signals.upstream_failed.connect(on_failed),
            signals.upstream_succeeded.connect(on_succeeded),
        ]

    async def _limits_changed(self, account_id: int) -> None:
        await self.directory.refresh()
        self.scheduler.limits_changed(account_id)

    async def close(self) -> None:
        self.scheduler.room.close()  # waiters end at once with shutting_down (WAIT-6)
        self.cooldown_store.flush()
        for disconnect in self._disconnects:
            disconnect()
        self._disconnects.clear()
        await self.http.aclose()


def build_runtime(
    settings: Settings, engine: Engine, cipher: CredentialCipher, clock: Clock
) -> ClientRuntime:
    """Create the runtime (call inside the app's lifespan: the HTTP client belongs to its loop)."""
    http = UpstreamClients(settings)
    codex = CodexAdapter(
        base_url=settings.codex_base_url,
        auth_url=settings.openai_auth_url,
        http=http.metadata,
        metadata_timeout=settings.metadata_timeout_s,
    )
    claude = ClaudeAdapter(
        base_url=settings.claude_base_url,
        auth_url=settings.claude_auth_url,
        http=http.metadata,
        metadata_timeout=settings.metadata_timeout_s,
        authorize_url=settings.claude_authorize_url,
        clock=clock.time,
    )
    leases = LeaseTable()
    vault = CredentialVault(
        engine,
        cipher,
        clock,
        {"codex": codex, "claude": claude},
        fallback_providers=frozenset(
            {name for name, a in (("codex", codex), ("claude", claude)) if a.refresh_fallback}
        ),
    )
    directory = AccountDirectory(engine)
    cooldown_store = CooldownStore(engine, clock)
    cooldowns = CooldownBook(
        clock,
        CooldownPolicy(
            fallback_s=settings.cooldown_fallback_s,
            model_threshold=settings.model_failure_threshold,
            model_window_s=settings.model_failure_window_s,
            model_initial_s=settings.model_cooldown_initial_s,
            model_max_s=settings.model_cooldown_max_s,
        ),
        persist=cooldown_store.save,
    )
    scheduler = Scheduler(
        clock=clock,
        directory=directory,
        leases=leases,
        cooldowns=cooldowns,
        affinity=AffinityStore(engine, clock),
        admission=Admission(clock, settings.workspace_capacity),
        room=WaitRoom(settings.wait_queue_max),
        wait_timeout_s=settings.wait_timeout_s,
    )

    adapters: dict[str, ProviderAdapter] = {"codex": codex, "claude": claude}

    def discoverer(provider: str) -> Callable[[int], Awaitable[list[str]]]:
        adapter = adapters[provider]

        async def discover(account_id: int) -> list[str]:
            # A metadata read: it counts against workspace capacity, never takes a model slot (ADM-10).
            ticket = scheduler.admission.enter_metadata()
            try:
                credentials = await vault.get(account_id, provider)
                return await adapter.list_models(credentials.bundle)
            finally:
                ticket.close()

        return discover

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
        catalog=ModelCatalog(clock, {name: discoverer(name) for name in adapters}),
        codex=codex,
        claude=claude,
    )


def client_runtime(connection: HTTPConnection) -> ClientRuntime:
    """The :class:`ClientRuntime` of the app serving ``connection``."""
    runtime: ClientRuntime = connection.app.state.client
    return runtime
