"""The storage and coordination backend the gateway tests run on: ``SUBLANE_TEST_BACKEND``.

Unset (or ``sqlite``), each test gateway keeps its SQLite file in its data folder and runs alone —
the embedded default. ``postgres+redis`` runs the same tests as a replica would run: each gateway
gets a migrated PostgreSQL database of its own and its own namespace in one Redis, so every limit,
wait and cooldown goes through the shared path (SCALE-1, SCALE-2). The servers are started once
per test process, on first use, and stopped when it exits.
"""

from __future__ import annotations

import atexit
import itertools
import os
from pathlib import Path
from typing import Any

from postgres_server import PostgresServer, postgres_bin
from redis_server import REDIS_SERVER, RedisServer

BACKEND = os.environ.get("SUBLANE_TEST_BACKEND", "sqlite")
_namespaces = itertools.count(1)
_servers: dict[str, Any] = {}


def shared_backend() -> bool:
    return BACKEND == "postgres+redis"


def _started() -> tuple[PostgresServer, RedisServer]:
    if not _servers:
        bin_dir = postgres_bin()
        if bin_dir is None or REDIS_SERVER is None:
            raise RuntimeError("SUBLANE_TEST_BACKEND=postgres+redis needs PostgreSQL and redis-server")
        postgres = PostgresServer(bin_dir)
        postgres.start()
        atexit.register(postgres.stop)
        redis = RedisServer().start()
        atexit.register(redis.remove)
        _servers.update(postgres=postgres, redis=redis)
    return _servers["postgres"], _servers["redis"]


_by_folder: dict[Path, dict[str, Any]] = {}


def backend_settings(data_dir: Path) -> dict[str, Any]:
    """Settings a test gateway adds for the backend under test ({} for the embedded default). A
    gateway started again on the same data folder (a restart) finds the same database."""
    if not shared_backend():
        return {}
    if data_dir not in _by_folder:
        postgres, redis = _started()
        _by_folder[data_dir] = {
            "database_url": postgres.migrated_database(),
            "redis_url": redis.url,
            "redis_namespace": f"test-{os.getpid()}-{next(_namespaces)}",
        }
    return dict(_by_folder[data_dir])
