"""SCALE-8: every value sealed with the credential key is re-sealed when the key changes.

The schema marks the columns that hold sealed values (``info=SEALED``); these tests enumerate the
marks. An installation is seeded so that every marked column holds a value (an account with a
proxy, a TOTP user, one with TOTP pending, a webhook, the key check); then

- every column of every table is read back: a value that opens with the key sits in a marked
  column, and every marked column was filled (a column added later must be marked, and seeded here);
- ``sublane import-sqlite`` into a real PostgreSQL with a new ``SUBLANE_CREDENTIALS_KEY`` (the
  documented move) leaves every marked value opening under the new key, and the moved installation
  serves through the account's proxy, signs the TOTP user in and delivers to the webhook;
- ``sublane restore`` into a folder whose ``SUBLANE_CREDENTIALS_KEY`` is another key re-seals too;
- a bundle carries every marked column of an account into an installation with another key;
- ``sublane rotate-key`` seals every marked value with a new key (a new key file, or a new
  ``SUBLANE_CREDENTIALS_KEY`` read from standard input).
"""

from __future__ import annotations

import base64
import secrets
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pyotp
import pytest
import sqlalchemy as sa
from gateway_pool import Pool
from ports import free_port
from postgres_server import PostgresServer, running_postgres
from proxy_servers import ProxyServer, proxies_installed, start_http_proxy
from sqlmodel import SQLModel
from test_backup import sublane as sublane_in
from test_cli import SUBLANE, _env
from webhook_receiver import received, receiver

from sublane_core import (
    CredentialCipher,
    CredentialDecryptError,
    create_db_engine,
    decode_key,
    load_or_create_key,
    sealed_columns,
)
from sublane_gateway.testing import MEMBER_PASSWORD, make_settings, running_gateway

pytestmark = pytest.mark.xdist_group("postgres")
BODY = {"model": "gpt-5-codex", "input": "hi"}
PROXY_FROM = "127.0.0.3"


@dataclass
class Seeded:
    """An SQLite installation whose every sealed column holds a value."""

    pool: Pool
    proxy: ProxyServer
    totp_secret: str
    webhook_port: int
    webhook_secret: str

    @property
    def data_dir(self) -> Path:
        return self.pool.gateway.settings.data_dir


@pytest.fixture
def seeded(make_pool: Callable[..., Pool], tmp_path: Path) -> Iterator[Seeded]:
    if not proxies_installed():
        pytest.skip("tinyproxy is not installed")
    pool = make_pool(accounts=1)
    proxy = start_http_proxy(tmp_path / "proxy", PROXY_FROM, "egress", "s3cret-pw")
    try:
        patched = pool.admin.patch(f"/api/accounts/{pool.account_ids[0]}", json={"proxy_url": proxy.url()})
        assert patched.status_code == 200, patched.text
        _, member = pool.gateway.member(pool.admin, "tess")
        secret = member.post("/api/me/totp/setup").json()["secret"]
        enabled = member.post("/api/me/totp/enable", json={"code": pyotp.TOTP(secret).now()})
        assert enabled.status_code == 200, enabled.text
        _, pending = pool.gateway.member(pool.admin, "pat")
        assert pending.post("/api/me/totp/setup").status_code == 200  # totp_pending
        port = free_port()
        hook = pool.admin.post(
            "/api/webhooks", json={"url": f"http://127.0.0.1:{port}/hook", "events": ["*"]}
        )
        assert hook.status_code == 201, hook.text
        yield Seeded(pool, proxy, secret, port, hook.json()["secret"])
    finally:
        proxy.stop()


def _new_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def _marked_values(engine: sa.engine.Engine) -> dict[tuple[str, str], list[bytes]]:
    """(table, column) → the non-null values of every marked column, in primary-key order."""
    found: dict[tuple[str, str], list[bytes]] = {}
    with engine.connect() as connection:
        for name, columns in sealed_columns().items():
            table = SQLModel.metadata.tables[name]
            order = list(table.primary_key.columns)
            for column in columns:
                rows = connection.execute(sa.select(table.c[column]).order_by(*order)).scalars()
                found[(name, column)] = [bytes(value) for value in rows if value is not None]
    return found


def _opened(values: dict[tuple[str, str], list[bytes]], key: bytes) -> dict[tuple[str, str], list[Any]]:
    cipher = CredentialCipher(key)
    return {place: [cipher.decrypt(value) for value in items] for place, items in values.items()}


def _sqlite(path: Path) -> sa.engine.Engine:
    return sa.create_engine(f"sqlite:///file:{path.as_posix()}?mode=ro&uri=true")


def test_scale_8_every_column_holding_sealed_values_is_marked_and_seeded(seeded: Seeded) -> None:
    key = load_or_create_key(seeded.data_dir / "credentials.key", create=False)
    cipher = CredentialCipher(key)
    marked = {(table, column) for table, columns in sealed_columns().items() for column in columns}
    assert {
        ("accounts", "credentials"), ("accounts", "proxy_url"), ("users", "totp_secret"),
        ("users", "totp_pending"), ("webhooks", "secret"), ("key_checks", "sealed"),
    } <= marked  # fmt: skip
    connection = sqlite3.connect(seeded.data_dir / "sublane.db")
    try:
        for table in SQLModel.metadata.sorted_tables:
            for column in table.columns:
                if isinstance(column.type, sa.LargeBinary):  # binary is for sealed values only
                    assert (table.name, column.name) in marked, f"{table.name}.{column.name} is not marked"
                values = connection.execute(f'SELECT "{column.name}" FROM "{table.name}"').fetchall()  # noqa: S608
                opened = 0
                for (value,) in values:
                    raw = value if isinstance(value, bytes) else str(value).encode() if value else b""
                    for candidate in (raw, _b64(raw)):
                        try:
                            cipher.decrypt(candidate)
                        except (CredentialDecryptError, ValueError):
                            continue
                        opened += 1
                if opened:
                    assert (table.name, column.name) in marked, (
                        f"{table.name}.{column.name} holds sealed values"
                    )
    finally:
        connection.close()
    # The seed fills every marked column, so the move tests below prove each of them.
    filled = _marked_values(_sqlite(seeded.data_dir / "sublane.db"))
    assert {place for place, values in filled.items() if values} == marked


def _b64(raw: bytes) -> bytes:
    try:
        return base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
    except ValueError:
        return b""


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


def test_scale_8_import_sqlite_with_a_new_key_reseals_every_marked_column_and_serves(
    seeded: Seeded, postgres: PostgresServer, tmp_path: Path
) -> None:
    pool = seeded.pool
    source_key = load_or_create_key(seeded.data_dir / "credentials.key", create=False)
    before = _opened(_marked_values(_sqlite(seeded.data_dir / "sublane.db")), source_key)
    url, new_key = postgres.new_database(), _new_key()
    moved = _run(
        [SUBLANE, "import-sqlite", str(seeded.data_dir)],
        _env(tmp_path / "pg-data", SUBLANE_DATABASE_URL=url, SUBLANE_CREDENTIALS_KEY=new_key),
    )
    assert moved.returncode == 0, moved.stderr
    target = create_db_engine(url)
    try:
        after = _marked_values(target)
    finally:
        target.dispose()
    assert set(after) == set(before)
    assert _opened(after, decode_key(new_key, "test")) == before  # each marked value, under the new key
    # End to end: the moved installation serves through the account's proxy, signs the TOTP user
    # in and delivers to the webhook.
    upstreams = {name[len("SUBLANE_") :].lower(): value for name, value in pool.sim.env().items()}
    settings = make_settings(tmp_path / "pg-data", database_url=url, credentials_key=new_key, **upstreams)
    with running_gateway(settings) as gateway:
        with httpx.Client(base_url=gateway.url, headers={"authorization": f"Bearer {pool.key}"}) as client:
            answer = client.post("/v1/responses", json=BODY)
            assert answer.status_code == 200, answer.text
        assert any(str(record.peer) == PROXY_FROM for record in pool.sim.requests()), "not through the proxy"
        signed_in = gateway.client().post(
            "/api/auth/login",
            json={"username": "tess", "password": MEMBER_PASSWORD,
                  "totp_code": pyotp.TOTP(seeded.totp_secret).at(time.time() + 30)},
        )  # fmt: skip
        assert signed_in.status_code == 200, signed_in.text
        admin = gateway.admin()
        log = tmp_path / "hook.log"
        with receiver(seeded.webhook_port, seeded.webhook_secret, log):
            assert admin.post("/api/webhooks/1/test").status_code == 202
            deliveries = received(log, 1)
        assert [(item["event"], item["valid"]) for item in deliveries] == [("webhook.test", True)]


def test_scale_8_restore_under_another_credentials_key_reseals_every_marked_column(
    seeded: Seeded, tmp_path: Path
) -> None:
    source_key = load_or_create_key(seeded.data_dir / "credentials.key", create=False)
    before = _opened(_marked_values(_sqlite(seeded.data_dir / "sublane.db")), source_key)
    taken = sublane_in("backup", str(tmp_path / "backup"), data_dir=seeded.data_dir, cwd=tmp_path)
    assert taken.returncode == 0, taken.stderr
    new_key, target_dir = _new_key(), tmp_path / "restored"
    restored = _run(
        [SUBLANE, "restore", str(tmp_path / "backup")],
        _env(target_dir, SUBLANE_CREDENTIALS_KEY=new_key),
    )
    assert restored.returncode == 0, restored.stderr
    after = _marked_values(_sqlite(target_dir / "sublane.db"))
    assert _opened(after, decode_key(new_key, "test")) == before
    assert not (target_dir / "credentials.key").exists()  # SUBLANE_CREDENTIALS_KEY is the key


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_scale_8_a_bundle_carries_every_sealed_account_column_to_another_key(
    seeded: Seeded, make_pool: Callable[..., Pool]
) -> None:
    source_key = load_or_create_key(seeded.data_dir / "credentials.key", create=False)
    before = _opened(_marked_values(_sqlite(seeded.data_dir / "sublane.db")), source_key)
    passphrase = "a long bundle passphrase"
    bundle = seeded.pool.admin.post("/api/accounts/export", json={"passphrase": passphrase}).content
    other = make_pool(accounts=0)  # its own credentials.key
    answer = other.admin.post(
        "/api/accounts/import-bundle",
        files={"file": ("accounts.bundle", bundle, "application/octet-stream")},
        data={"passphrase": passphrase},
        headers={"origin": other.gateway.url},
    )
    assert answer.status_code == 200 and answer.json()["skipped"] == [], answer.text
    other_key = load_or_create_key(other.gateway.settings.data_dir / "credentials.key", create=False)
    assert other_key != source_key
    after = _opened(_marked_values(other.gateway.engine), other_key)
    for column in sealed_columns()["accounts"]:
        assert after[("accounts", column)] == before[("accounts", column)], column


def test_scale_8_rotate_key_reseals_every_marked_column_under_a_new_key(
    seeded: Seeded, tmp_path: Path
) -> None:
    source_key = load_or_create_key(seeded.data_dir / "credentials.key", create=False)
    before = _opened(_marked_values(_sqlite(seeded.data_dir / "sublane.db")), source_key)
    folder = tmp_path / "stopped"  # a copy of the installation, not served (rotate-key needs it stopped)
    folder.mkdir(mode=0o700)
    copy = sqlite3.connect(folder / "sublane.db")
    original = sqlite3.connect(seeded.data_dir / "sublane.db")
    try:
        original.backup(copy)
    finally:
        original.close()
        copy.close()
    (folder / "credentials.key").write_bytes((seeded.data_dir / "credentials.key").read_bytes())
    rotated = _run([SUBLANE, "rotate-key"], _env(folder))
    assert rotated.returncode == 0, rotated.stderr
    new_key = load_or_create_key(folder / "credentials.key", create=False)
    assert new_key != source_key and len(list(folder.glob("credentials.key.old-*"))) == 1
    assert _opened(_marked_values(_sqlite(folder / "sublane.db")), new_key) == before
    # With SUBLANE_CREDENTIALS_KEY (replicas): the new key comes on standard input.
    current = (folder / "credentials.key").read_text().strip()
    given = _new_key()
    rotated = subprocess.run(
        [SUBLANE, "rotate-key"], env=_env(folder, SUBLANE_CREDENTIALS_KEY=current), input=given + "\n",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert rotated.returncode == 0, rotated.stderr
    assert given not in rotated.stderr and current not in rotated.stderr
    assert _opened(_marked_values(_sqlite(folder / "sublane.db")), decode_key(given, "test")) == before
