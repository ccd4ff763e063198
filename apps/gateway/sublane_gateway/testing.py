"""Running the gateway for real on loopback, for tests, demos and benchmarks.

``serve_in_thread`` starts a real uvicorn server (real sockets, real HTTP) on an ephemeral port in a
background thread and stops it on exit, so tests talk to SubLane exactly as clients do.
``running_gateway`` does that for a migrated database and hands out signed-in HTTP clients.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from sqlalchemy.engine import Engine
from starlette.types import ASGIApp

from sublane_core import Settings, ShiftedClock, create_db_engine, upgrade_database
from sublane_gateway._app import asgi_app, create_app
from sublane_gateway._backlog import DRAIN_LIMIT, BacklogDrain, listening_socket
from sublane_gateway._connection_guard import guarded_http
from sublane_gateway._settings import gateway_settings

STARTUP_TIMEOUT_S = 15.0


@contextmanager
def serve_in_thread(
    app: ASGIApp, host: str = "127.0.0.1", port: int = 0, settings: Settings | None = None
) -> Iterator[str]:
    """Serve ``app`` on ``host`` (a free port by default); yields the base URL (``http://127.0.0.1:PORT``).

    ``settings``: whose client header and body timeouts the server keeps (OPS-4; else the defaults).
    """
    timeouts = settings or Settings.model_construct()
    backlog = BacklogDrain(timeouts.model_starts_per_turn or DRAIN_LIMIT)
    # proxy_headers=False as `sublane serve` runs: X-Forwarded-* is SubLane's to judge (OPS-6); and
    # its HTTP protocol (OPS-4's header deadline, a response's head and body in one write).
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        http=guarded_http(timeouts.client_header_timeout_s, timeouts.body_timeout_s, backlog),
    )
    server = uvicorn.Server(config)
    listener = listening_socket(config)  # and the backlog drain `sublane serve` has (issue #49)
    backlog.listener = listener
    sockets = None if listener is None else [listener]
    thread = threading.Thread(target=server.run, args=(sockets,), name="sublane-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the gateway stopped during start-up")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise TimeoutError("the gateway did not start in time")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STARTUP_TIMEOUT_S)
        if thread.is_alive():  # a gateway left running would go on using what the test tears down
            raise RuntimeError("the gateway did not stop in time")


ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "admin-pass-1"  # noqa: S105  (a test fixture, not a secret)
MEMBER_PASSWORD = "member-pass-1"  # noqa: S105


@dataclass
class Gateway:
    """A running gateway, its fake clock, and helpers that hand out HTTP clients."""

    url: str
    settings: Settings
    app: FastAPI
    clock: ShiftedClock
    _clients: list[httpx.Client] = field(default_factory=list)

    def client(self, **kwargs: Any) -> httpx.Client:
        """A new HTTP client for the gateway, closed with the gateway."""
        client = httpx.Client(base_url=self.url, timeout=10, **kwargs)
        self._clients.append(client)
        return client

    @property
    def engine(self) -> Engine:
        """The gateway's database engine, for looking at what was stored."""
        engine: Engine = self.app.state.gateway.engine
        return engine

    def login(self, username: str, password: str) -> httpx.Client:
        """A client signed in as ``username``."""
        client = self.client()
        _expect(client.post("/api/auth/login", json={"username": username, "password": password}), 200)
        return client

    def admin(self) -> httpx.Client:
        """A client signed in as the bootstrap admin."""
        return self.login(ADMIN_USERNAME, ADMIN_PASSWORD)

    def add_member(self, admin: httpx.Client, username: str, **fields: Any) -> dict[str, Any]:
        """Create a member (password ``MEMBER_PASSWORD``) through the API."""
        body = {"username": username, "password": MEMBER_PASSWORD, **fields}
        return _expect(admin.post("/api/users", json=body), 201)

    def member(
        self, admin: httpx.Client, username: str, **fields: Any
    ) -> tuple[dict[str, Any], httpx.Client]:
        """Create a member and return it with a client signed in as them."""
        user = self.add_member(admin, username, **fields)
        return user, self.login(username, MEMBER_PASSWORD)

    def close(self) -> None:
        """Close every client handed out."""
        for client in self._clients:
            client.close()


def _expect(response: httpx.Response, status: int) -> dict[str, Any]:
    if response.status_code != status:
        raise AssertionError(f"expected HTTP {status}, got {response.status_code}: {response.text}")
    body: dict[str, Any] = response.json()
    return body


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings for a test gateway: its own data folder, the bootstrap admin, no ``.env``."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "admin_username": ADMIN_USERNAME,
        "admin_password": ADMIN_PASSWORD,
        "_env_file": None,
    }
    values.update(overrides)
    return gateway_settings(**values)


def migrate(settings: Settings) -> None:
    """Create or upgrade the schema of the settings' database."""
    engine = create_db_engine(settings.effective_database_url)
    try:
        upgrade_database(engine)
    finally:
        engine.dispose()


@contextmanager
def running_gateway(
    settings: Settings, clock: ShiftedClock | None = None, port: int = 0
) -> Iterator[Gateway]:
    """Migrate, build the app and serve it on loopback until the block ends."""
    migrate(settings)
    clock = clock or ShiftedClock()
    app = create_app(settings, clock=clock)
    with serve_in_thread(asgi_app(app), port=port, settings=settings) as url:
        gateway = Gateway(url=url, settings=settings, app=app, clock=clock)
        try:
            yield gateway
        finally:
            gateway.close()
