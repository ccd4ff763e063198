"""Everything the client API needs while it runs, created once per app and wired to the signals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from sqlalchemy.engine import Engine
from starlette.requests import HTTPConnection

from sublane_core import Clock, CredentialCipher, Settings, signals
from sublane_gateway.client._catalog import ModelCatalog
from sublane_gateway.client._keys import KeyAuthenticator
from sublane_providers import CredentialVault
from sublane_providers.codex import CodexAdapter
from sublane_scheduler import AccountDirectory, LeaseTable, RoundRobin

HTTP_POOL_SIZE = 512


@dataclass(slots=True)
class ClientRuntime:
    """Process-wide state of the client API."""

    settings: Settings
    clock: Clock
    http: httpx.AsyncClient
    keys: KeyAuthenticator
    directory: AccountDirectory
    leases: LeaseTable
    rotation: RoundRobin
    vault: CredentialVault
    catalog: ModelCatalog
    codex: CodexAdapter
    _disconnects: list[Callable[[], None]] = field(default_factory=list)

    def connect_signals(self) -> None:
        """Keep caches true to the database: forget what a change made stale."""

        def on_account(payload: signals.AccountChanged) -> None:
            self.directory.invalidate()
            self.vault.forget(payload.account_id)
            if payload.change in ("deleted", "reauthorized", "enabled", "disabled"):
                self.catalog.forget(payload.account_id)

        def on_access(_payload: signals.AccessChanged) -> None:
            self.keys.invalidate()
            self.directory.invalidate()

        self._disconnects += [
            signals.account_changed.connect(on_account),
            signals.access_changed.connect(on_access),
        ]

    async def close(self) -> None:
        for disconnect in self._disconnects:
            disconnect()
        self._disconnects.clear()
        await self.http.aclose()


def build_runtime(
    settings: Settings, engine: Engine, cipher: CredentialCipher, clock: Clock
) -> ClientRuntime:
    """Create the runtime (call inside the app's lifespan: the HTTP client belongs to its loop)."""
    http = httpx.AsyncClient(
        limits=httpx.Limits(max_connections=HTTP_POOL_SIZE, max_keepalive_connections=HTTP_POOL_SIZE),
        timeout=httpx.Timeout(settings.header_timeout_s, connect=min(30.0, settings.header_timeout_s)),
        follow_redirects=False,
        trust_env=True,  # honour HTTPS_PROXY for a corporate egress proxy
    )
    codex = CodexAdapter(
        base_url=settings.codex_base_url,
        auth_url=settings.openai_auth_url,
        http=http,
        metadata_timeout=settings.metadata_timeout_s,
    )
    leases = LeaseTable()
    vault = CredentialVault(engine, cipher, clock, {"codex": codex})

    async def discover_codex(account_id: int) -> list[str]:
        credentials = await vault.get(account_id, "codex")
        return await codex.list_models(credentials.bundle)

    return ClientRuntime(
        settings=settings,
        clock=clock,
        http=http,
        keys=KeyAuthenticator(engine, clock),
        directory=AccountDirectory(engine),
        leases=leases,
        rotation=RoundRobin(leases),
        vault=vault,
        catalog=ModelCatalog(clock, {"codex": discover_codex}),
        codex=codex,
    )


def client_runtime(connection: HTTPConnection) -> ClientRuntime:
    """The :class:`ClientRuntime` of the app serving ``connection``."""
    runtime: ClientRuntime = connection.app.state.client
    return runtime
