"""Gateway replicas as real ``sublane serve`` processes sharing one database and one Redis (SCALE).

A :class:`Cluster` migrates a fresh PostgreSQL database once, then starts replicas on it — each
its own process, data folder and port, all with the same credential key, Redis and upstream
simulator — and gives admin and member clients per replica.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import sqlalchemy as sa
from ports import free_port
from test_cli import SUBLANE, _env

from sublane_core import create_db_engine
from sublane_sim import Simulator

ADMIN = {"username": "admin", "password": "admin-pass-1"}


@dataclass
class Replica:
    """One ``sublane serve`` process."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def admin(self) -> httpx.Client:
        client = httpx.Client(base_url=self.url, timeout=30)
        assert client.post("/api/auth/login", json=ADMIN).is_success
        return client

    def client(self, key: str, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout, headers={"authorization": f"Bearer {key}"})

    def kill(self) -> None:
        """SIGKILL: no shutdown, nothing given back (SCALE-3)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"the replica at {self.url} did not stop on SIGTERM") from None


@dataclass
class Cluster:
    """Replicas of one installation."""

    folder: Path
    database_url: str
    redis_url: str
    sim: Simulator
    extra: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)
    key: str = field(default_factory=lambda: base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())

    def env(self, data_dir: Path, **extra: str) -> dict[str, str]:
        return _env(
            data_dir,
            SUBLANE_DATABASE_URL=self.database_url,
            SUBLANE_REDIS_URL=self.redis_url,
            SUBLANE_CREDENTIALS_KEY=self.key,
            SUBLANE_ADMIN_USERNAME=ADMIN["username"],
            SUBLANE_ADMIN_PASSWORD=ADMIN["password"],
            SUBLANE_LOG_LEVEL="INFO",
            **self.sim.env(),
            **self.extra,
            **extra,
        )

    def migrate(self) -> None:
        data_dir = self.folder / "migrate"
        done = subprocess.run(
            [SUBLANE, "migrate"],
            env=self.env(data_dir),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    def start(self, count: int = 1, **extra: str) -> list[Replica]:
        """Start ``count`` replicas side by side and wait until each is ready."""
        started = []
        for _ in range(count):
            index = len(self.replicas)
            data_dir = self.folder / f"replica-{index}"
            data_dir.mkdir(parents=True, exist_ok=True)
            port = free_port()
            log = self.folder / f"replica-{index}.log"
            with log.open("a") as output:
                process = subprocess.Popen(
                    [SUBLANE, "serve", "--port", str(port)],
                    env=self.env(data_dir, **extra),
                    cwd=data_dir,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            replica = Replica(f"http://127.0.0.1:{port}", process, log)
            self.replicas.append(replica)
            started.append(replica)
        for replica in started:
            wait_ready(replica)
        return started

    def stop(self) -> None:
        stuck = []
        for replica in self.replicas:
            try:
                replica.stop()
            except AssertionError as error:  # the others are stopped all the same
                stuck.append(str(error))
        assert not stuck, stuck

    @contextmanager
    def database(self) -> Iterator[sa.Connection]:
        """A connection to the replicas' database."""
        engine = create_db_engine(self.database_url)
        try:
            with engine.connect() as connection:
                yield connection
        finally:
            engine.dispose()


def wait_ready(replica: Replica, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if replica.process.poll() is not None:
            raise AssertionError(f"sublane serve exited:\n{replica.log.read_text()}")
        try:
            if httpx.get(f"{replica.url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, replica.log.read_text()
        time.sleep(0.1)


@contextmanager
def cluster(
    folder: Path, database_url: str, redis_url: str, sim: Simulator, **extra: str
) -> Iterator[Cluster]:
    """A migrated database and no replica yet; every replica started is stopped at the end."""
    nodes = Cluster(folder, database_url, redis_url, sim, extra=dict(extra))
    nodes.migrate()
    try:
        yield nodes
    finally:
        nodes.stop()
