"""psycopg 3 against asyncpg for what SubLane asks of PostgreSQL (issue #32, SCALE-1).

``python bench/pg_drivers.py`` starts a PostgreSQL server the way the tests do (Debian's binaries,
a temporary folder, ``fsync=off``), migrates a database, and times, with each driver:

- **batch**: the history writer's work — one transaction inserting 100 request records (the
  writer's batch under load), 200 times;
- **point**: what a cache miss costs — 2,000 single reads of an account row by primary key.

psycopg 3 is timed as SubLane uses it (synchronous, through SQLAlchemy's ``postgresql+psycopg``, in
the calling thread); asyncpg (0.32, installed by ``pip install --target .cache/bench-asyncpg
asyncpg`` — never a project dependency) through its own connection on an event loop. The server
and this process share the machine; both figures are medians of ``BENCH_PG_ROUNDS`` (3) rounds.
"""

# ruff: noqa: S608  (SQL built from this file's own constant column names)
from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / ".cache" / "bench-asyncpg"))

from postgres_server import PostgresServer, postgres_bin  # noqa: E402

from sublane_core import create_db_engine, upgrade_database  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_PG_ROUNDS", "3"))
BATCHES, BATCH, POINTS = 200, 100, 2000
COLUMNS = ("request_id", "started_at", "user_id", "model", "protocol", "operation", "outcome")


def _row(index: int) -> dict[str, Any]:
    now = time.time()
    return {
        "request_id": f"req_{index:024d}",
        "started_at": now,
        "user_id": 1,
        "model": "gpt-5-codex",
        "protocol": "responses",
        "operation": "create",
        "outcome": "success",
    }


def psycopg_round(url: str, offset: int) -> tuple[float, float]:
    engine = create_db_engine(url)
    insert = sa.text(
        f"INSERT INTO request_records ({', '.join(COLUMNS)}) VALUES ({', '.join(':' + c for c in COLUMNS)})"
    )
    started = time.perf_counter()
    for batch in range(BATCHES):
        with engine.begin() as connection:
            connection.execute(insert, [_row(offset + batch * BATCH + i) for i in range(BATCH)])
    batch_s = time.perf_counter() - started
    select = sa.text("SELECT * FROM accounts WHERE id = :id")
    started = time.perf_counter()
    with engine.connect() as connection:
        for _ in range(POINTS):
            connection.execute(select, {"id": 1}).first()
    point_s = time.perf_counter() - started
    engine.dispose()
    return batch_s, point_s


async def asyncpg_round(url: str, offset: int) -> tuple[float, float]:
    import asyncpg

    connection = await asyncpg.connect(url)
    placeholders = ", ".join(f"${i + 1}" for i in range(len(COLUMNS)))
    insert = f"INSERT INTO request_records ({', '.join(COLUMNS)}) VALUES ({placeholders})"
    started = time.perf_counter()
    for batch in range(BATCHES):
        async with connection.transaction():
            rows = [_row(offset + batch * BATCH + i) for i in range(BATCH)]
            await connection.executemany(insert, [tuple(row[c] for c in COLUMNS) for row in rows])
    batch_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(POINTS):
        await connection.fetchrow("SELECT * FROM accounts WHERE id = $1", 1)
    point_s = time.perf_counter() - started
    await connection.close()
    return batch_s, point_s


def main() -> None:
    bin_dir = postgres_bin()
    assert bin_dir is not None, "needs Debian's postgresql package"
    server = PostgresServer(bin_dir)
    server.start()
    try:
        url = server.new_database()
        engine = create_db_engine(url)
        upgrade_database(engine)
        with engine.begin() as connection:
            now = time.time()
            connection.execute(
                sa.text(
                    "INSERT INTO accounts (provider, name, enabled, max_concurrency, credentials, auth_state,"
                    " lifecycle_revision, credentials_fence, created_at, updated_at)"
                    " VALUES ('codex', 'a', true, 4, :c, 'ok', 1, 0, :t, :t)"
                ),
                {"c": b"sealed", "t": now},
            )
        engine.dispose()
        results: dict[str, dict[str, list[float]]] = {"psycopg": {}, "asyncpg": {}}
        offset = 0
        for _ in range(ROUNDS):
            for name in ("psycopg", "asyncpg"):
                offset += BATCHES * BATCH
                if name == "psycopg":
                    batch_s, point_s = psycopg_round(url, offset)
                else:
                    batch_s, point_s = asyncio.run(
                        asyncpg_round(url.replace("postgresql://", "postgres://"), offset)
                    )
                results[name].setdefault("batch_ms", []).append(batch_s * 1000 / BATCHES)
                results[name].setdefault("point_us", []).append(point_s * 1e6 / POINTS)
        print(
            json.dumps(
                {
                    name: {metric: round(statistics.median(values), 3) for metric, values in figures.items()}
                    | {"rounds": figures}
                    for name, figures in results.items()
                },
                indent=2,
            )
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
