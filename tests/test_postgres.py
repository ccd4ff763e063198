"""SCALE-1: the gateway on a real PostgreSQL server (Debian's, started in a temporary folder).

The same migrations create every table there; ``serve`` starts only on the schema it needs unless
``SUBLANE_AUTO_MIGRATE`` allows an upgrade; a gateway on PostgreSQL serves and records model calls;
``sublane import-sqlite`` moves an SQLite installation into an empty PostgreSQL database, and only
into an empty one.
"""

from __future__ import annotations

import base64
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from gateway_pool import Pool, settings_for
from postgres_server import PostgresServer, running_postgres
from sqlmodel import SQLModel
from test_cli import SUBLANE, _env, serve

from sublane_core import create_db_engine, current_revision, head_revision, upgrade_database
from sublane_gateway.testing import make_settings, running_gateway
from sublane_sim import Simulator

pytestmark = pytest.mark.xdist_group("postgres")  # one server for these tests, on one worker


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


def _sublane(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SUBLANE, *args], env=_env(data_dir, **env), capture_output=True, text=True, timeout=60, check=False
    )


def _call(pool: Pool, text: str = "hi") -> None:
    with pool.client() as client:
        answer = client.post("/v1/responses", json={"model": "gpt-5-codex", "input": text})
        assert answer.status_code == 200, answer.text


def _records(admin: httpx.Client, count: int) -> list[dict[str, object]]:
    deadline = time.monotonic() + 10
    while True:
        items: list[dict[str, object]] = admin.get("/api/requests").json()["items"]
        if len(items) >= count or time.monotonic() > deadline:
            return items
        time.sleep(0.05)


def test_scale_1_the_same_migrations_create_every_table_on_postgresql(postgres: PostgresServer) -> None:
    engine = create_db_engine(postgres.new_database())
    try:
        assert current_revision(engine) is None
        upgrade_database(engine)
        assert current_revision(engine) == head_revision()
        inspector = sa.inspect(engine)
        assert set(inspector.get_table_names()) == set(SQLModel.metadata.tables) | {"alembic_version"}
        for name, table in SQLModel.metadata.tables.items():
            assert {column["name"] for column in inspector.get_columns(name)} == set(table.c.keys()), name
        upgrade_database(engine)  # repeatable
    finally:
        engine.dispose()


def test_scale_1_serve_refuses_an_old_schema_unless_auto_migrate(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.new_database()
    data_dir = tmp_path / "data"
    refused = _sublane(data_dir, "serve", "--port", "0", SUBLANE_DATABASE_URL=url)
    assert refused.returncode != 0
    assert "run `sublane migrate` first" in refused.stderr and "empty database" in refused.stderr
    with serve(data_dir, SUBLANE_DATABASE_URL=url, SUBLANE_AUTO_MIGRATE="true") as base:
        assert httpx.get(f"{base}/healthz").status_code == 200
    other = postgres.new_database()
    migrated = _sublane(data_dir, "migrate", SUBLANE_DATABASE_URL=other)
    assert migrated.returncode == 0, migrated.stderr
    with serve(tmp_path / "data2", SUBLANE_DATABASE_URL=other) as base:  # at head: no flag needed
        assert httpx.get(f"{base}/readyz").status_code == 200


def test_scale_1_a_gateway_on_postgresql_serves_and_records_model_calls(
    postgres: PostgresServer, make_pool: Callable[..., Pool]
) -> None:
    url = postgres.new_database()
    pool = make_pool(accounts=2, database_url=url)
    for text in ("one", "two", "three"):
        _call(pool, text)
    records = _records(pool.admin, 3)
    assert len(records) == 3 and all(record["outcome"] == "success" for record in records)
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT count(*) FROM request_records")).scalar() == 3
            assert connection.execute(sa.text("SELECT count(*) FROM accounts")).scalar() == 2
    finally:
        engine.dispose()


def test_scale_1_import_sqlite_moves_an_installation_into_an_empty_postgresql(
    postgres: PostgresServer, make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool(accounts=2)  # the SQLite installation, used a little
    _call(pool)
    assert len(_records(pool.admin, 1)) == 1
    source_dir = pool.gateway.settings.data_dir
    url = postgres.new_database()
    target_dir = tmp_path / "pg-data"  # another credentials.key: the credentials are sealed anew
    moved = _sublane(target_dir, "import-sqlite", str(source_dir), SUBLANE_DATABASE_URL=url)
    assert moved.returncode == 0, moved.stderr
    assert "accounts" in moved.stderr and "request_records" in moved.stderr
    # The PostgreSQL installation serves the moved accounts with the moved key, and keeps counting ids.
    settings = make_settings(target_dir, database_url=url, **_upstreams(pool))
    with running_gateway(settings) as gateway:
        admin = gateway.admin()  # the bootstrap admin moved with the users
        assert {account["name"] for account in admin.get("/api/accounts").json()["items"]} == {
            "codex-1",
            "codex-2",
        }
        with httpx.Client(base_url=gateway.url, headers={"authorization": f"Bearer {pool.key}"}) as client:
            answer = client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "after the move"})
            assert answer.status_code == 200, answer.text  # the moved key, the moved credentials
        records = _records(admin, 2)
        assert len(records) == 2 and len({record["id"] for record in records}) == 2
    again = _sublane(target_dir, "import-sqlite", str(source_dir), SUBLANE_DATABASE_URL=url)
    assert again.returncode != 0 and "not empty" in again.stderr  # never into a database in use


def _upstreams(pool: Pool) -> dict[str, str]:
    return {name[len("SUBLANE_") :].lower(): value for name, value in pool.sim.env().items()}


def test_scale_1_replicas_share_the_credential_key_from_sublane_credentials_key(
    postgres: PostgresServer, sim: Simulator, tmp_path: Path
) -> None:
    """Two replicas with their own data folders and one PostgreSQL: the key comes from the
    environment, no key file is written, and what one replica sealed the other opens."""
    url = postgres.new_database()
    key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    first_dir, second_dir = tmp_path / "replica-1", tmp_path / "replica-2"
    account = sim.create_account("codex")
    with running_gateway(settings_for(sim, first_dir, database_url=url, credentials_key=key)) as first:
        admin = first.admin()
        body = {"provider": "codex", "name": "shared", "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        secret = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
    second_settings = settings_for(sim, second_dir, database_url=url, credentials_key=key)
    with running_gateway(second_settings) as second:
        client = second.client(headers={"authorization": f"Bearer {secret}"})
        answer = client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "on replica 2"})
        assert answer.status_code == 200, answer.text
    assert not (first_dir / "credentials.key").exists() and not (second_dir / "credentials.key").exists()
    wrong = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    refused = _sublane(
        tmp_path / "replica-3",
        "serve",
        "--port",
        "0",
        SUBLANE_DATABASE_URL=url,
        SUBLANE_CREDENTIALS_KEY=wrong,
    )
    assert refused.returncode != 0
    assert "SUBLANE_CREDENTIALS_KEY does not open the credentials" in refused.stderr
    assert wrong not in refused.stderr and key not in refused.stderr


def test_scale_5_record_ids_stay_unique_and_every_replica_shows_every_call(
    postgres: PostgresServer, sim: Simulator, tmp_path: Path
) -> None:
    """Two replicas on one PostgreSQL record calls at the same time: ids unique and increasing in
    the order they were written, and the history view of either shows both replicas' calls."""
    url = postgres.new_database()
    key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    account = sim.create_account("codex")
    settings = [
        settings_for(sim, tmp_path / f"replica-{n}", database_url=url, credentials_key=key) for n in (1, 2)
    ]
    with running_gateway(settings[0]) as first:
        admin = first.admin()
        body = {"provider": "codex", "name": "shared", "credentials": account.credentials, "group_ids": [1]}
        assert admin.post("/api/accounts/import", json=body).status_code == 201
        secret = admin.post("/api/users/1/keys", json={"name": "k", "group_id": 1}).json()["secret"]
        with running_gateway(settings[1]) as second:
            clients = [
                gateway.client(headers={"authorization": f"Bearer {secret}"}) for gateway in (first, second)
            ]
            for round_ in range(5):
                for number, client in enumerate(clients):
                    answer = client.post(
                        "/v1/responses", json={"model": "gpt-5-codex", "input": f"{round_}-{number}"}
                    )
                    assert answer.status_code == 200, answer.text
            for gateway in (first, second):
                seen = _records(gateway.admin(), 10)
                assert len(seen) == 10, [record["id"] for record in seen]
                ids = [record["id"] for record in seen]
                assert len(set(ids)) == 10 and ids == sorted(ids, reverse=True)  # newest first, no repeats
