"""``sublane backup`` and ``sublane restore`` (OPS-9) as an operator runs them: real processes.

The backup is taken by a separate ``sublane backup`` process while the gateway serves model calls
and management writes; it is restored by ``sublane restore`` into another data folder, checked with
SQLite's ``integrity_check`` and served again, with the same accounts, keys and credentials.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gateway_pool import Pool, settings_for

from sublane_core import head_revision
from sublane_gateway.testing import running_gateway
from sublane_sim import Simulator

SUBLANE = str(Path(sys.executable).parent / "sublane")
BODY = {"model": "gpt-5-codex", "input": "say hi", "stream": True, "store": False}


def sublane(*args: str, data_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SUBLANE_")}
    env["SUBLANE_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [SUBLANE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def integrity(database: Path) -> list[str]:
    connection = sqlite3.connect(database)
    try:
        return [row[0] for row in connection.execute("PRAGMA integrity_check")]
    finally:
        connection.close()


def accounts_and_keys(admin: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    accounts = [
        (item["id"], item["name"], item["provider"], item["group_ids"])
        for item in admin.get("/api/accounts").json()["items"]
    ]
    keys = [
        (item["id"], item["name"], item["user_id"], item["state"])
        for item in admin.get("/api/keys").json()["items"]
    ]
    return accounts, keys


def test_ops_9_a_backup_taken_under_write_load_restores_and_serves_the_same_accounts_and_keys(
    make_pool: Callable[..., Pool], sim: Simulator, tmp_path: Path
) -> None:
    pool = make_pool(accounts=2)
    data_dir = Path(pool.gateway.settings.data_dir)
    stop = threading.Event()
    failures: list[str] = []
    done = {"calls": 0, "writes": 0}

    def model_calls() -> None:
        client = pool.client()
        while not stop.is_set():
            answer = client.post("/v1/responses", json=BODY)
            if answer.status_code != 200:
                failures.append(f"model call: {answer.status_code} {answer.text[:300]}")
            done["calls"] += 1

    def management_writes() -> None:
        limit = 1
        while not stop.is_set():
            limit = limit % 50 + 1
            answer = pool.admin.patch(
                f"/api/accounts/{pool.account_ids[0]}/limits", json={"max_concurrency": limit}
            )
            if answer.status_code != 200:
                failures.append("limits")
            pool.admin.post("/api/users/1/keys", json={"name": f"k{done['writes'] % 15}", "group_id": 1})
            pool.admin.delete(f"/api/keys/{pool.admin.get('/api/keys').json()['items'][-1]['id']}")
            done["writes"] += 1

    workers = [
        threading.Thread(target=work, daemon=True) for work in (model_calls, model_calls, management_writes)
    ]
    for worker in workers:
        worker.start()
    try:
        time.sleep(1.0)  # the load is running
        backup = sublane("backup", str(tmp_path / "backup"), data_dir=data_dir, cwd=tmp_path)
        time.sleep(0.5)  # and goes on after the snapshot
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
    assert backup.returncode == 0, backup.stderr
    assert "backup written" in backup.stderr
    assert not failures and done["calls"] > 5 and done["writes"] > 2, (failures, done)
    expected_accounts, live_keys = accounts_and_keys(pool.admin)

    folder = tmp_path / "backup"
    assert sorted(path.name for path in folder.iterdir()) == [
        "credentials.key",
        "manifest.json",
        "sublane.db",
    ]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert all(oct(path.stat().st_mode & 0o777) == "0o600" for path in folder.iterdir())
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["schema_revision"] == head_revision() and manifest["counts"]["accounts"] == 2
    assert integrity(folder / "sublane.db") == ["ok"]
    assert not list(tmp_path.glob(".backup.partial-*"))

    restored = tmp_path / "restored"
    result = sublane("restore", str(folder), data_dir=restored, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert integrity(restored / "sublane.db") == ["ok"]
    assert (restored / "credentials.key").read_bytes() == (data_dir / "credentials.key").read_bytes()
    with running_gateway(settings_for(sim, restored)) as gateway:
        admin = gateway.admin()
        accounts, keys = accounts_and_keys(admin)
        assert accounts == expected_accounts
        assert len(keys) == manifest["counts"]["api_keys"]
        # Keys as they were at the snapshot: each one existed in the live database, the pool's is active.
        assert {key[:3] for key in keys} <= {key[:3] for key in live_keys}
        assert (*live_keys[0][:3], "active") in keys
        # The pool's key and the sealed credentials both work: a real call through the simulator.
        client = gateway.client(headers={"authorization": f"Bearer {pool.key}"})
        assert client.post("/v1/responses", json=BODY).status_code == 200
        history = admin.get("/api/requests").json()["items"]
        assert len(history) >= 1


@pytest.fixture
def backed_up(make_pool: Callable[..., Pool], tmp_path: Path) -> tuple[Pool, Path]:
    pool = make_pool()
    pool.client().post("/v1/responses", json=BODY)
    result = sublane(
        "backup", str(tmp_path / "b"), data_dir=Path(pool.gateway.settings.data_dir), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    return pool, tmp_path / "b"


def test_ops_9_restore_refuses_a_running_data_folder(backed_up: tuple[Pool, Path], tmp_path: Path) -> None:
    pool, folder = backed_up
    data_dir = Path(pool.gateway.settings.data_dir)
    before = (data_dir / "sublane.db").stat().st_mtime_ns
    result = sublane("restore", str(folder), data_dir=data_dir, cwd=tmp_path)
    assert result.returncode != 0
    assert "running SubLane" in result.stderr and "stop it first" in result.stderr
    assert (data_dir / "sublane.db").stat().st_mtime_ns == before
    assert not list(data_dir.glob("*.pre-restore-*"))
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200  # still serving


def test_ops_9_restore_refuses_a_backup_from_a_newer_schema(
    backed_up: tuple[Pool, Path], tmp_path: Path
) -> None:
    _pool, folder = backed_up
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["schema_revision"] = "9999"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    target = tmp_path / "target"
    result = sublane("restore", str(folder), data_dir=target, cwd=tmp_path)
    assert result.returncode != 0
    assert "9999" in result.stderr and "newer" in result.stderr
    assert not (target / "sublane.db").exists()


def test_ops_9_restore_refuses_a_damaged_or_foreign_folder(
    backed_up: tuple[Pool, Path], tmp_path: Path
) -> None:
    _pool, folder = backed_up
    target = tmp_path / "target"
    assert "not a backup" in sublane("restore", str(tmp_path), data_dir=target, cwd=tmp_path).stderr
    database = folder / "sublane.db"
    damaged = bytearray(database.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    database.write_bytes(bytes(damaged))
    result = sublane("restore", str(folder), data_dir=target, cwd=tmp_path)
    assert result.returncode != 0 and "checksum" in result.stderr
    assert not (target / "sublane.db").exists()


def test_ops_9_restore_keeps_what_the_folder_held_and_the_next_start_serves_the_backup(
    backed_up: tuple[Pool, Path], sim: Simulator, tmp_path: Path
) -> None:
    pool, folder = backed_up
    target = tmp_path / "target"
    with running_gateway(settings_for(sim, target)) as gateway:  # another, unrelated installation
        gateway.admin().post("/api/users", json={"username": "someone", "password": "someone-pass"})
    old_key = (target / "credentials.key").read_bytes()
    result = sublane("restore", str(folder), data_dir=target, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    kept = sorted(path.name.split(".pre-restore-")[0] for path in target.glob("*.pre-restore-*"))
    assert kept == ["credentials.key", "sublane.db"]
    assert next(target.glob("credentials.key.pre-restore-*")).read_bytes() == old_key
    assert oct((target / "credentials.key").stat().st_mode & 0o777) == "0o600"
    with running_gateway(settings_for(sim, target)) as gateway:
        names = [user["username"] for user in gateway.admin().get("/api/users").json()["items"]]
        assert "someone" not in names
        client = gateway.client(headers={"authorization": f"Bearer {pool.key}"})
        assert client.post("/v1/responses", json=BODY).status_code == 200


def test_ops_9_backup_refuses_a_used_folder_and_a_missing_key(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool()
    data_dir = Path(pool.gateway.settings.data_dir)
    used = tmp_path / "used"
    used.mkdir()
    (used / "something").write_text("keep me")
    result = sublane("backup", str(used), data_dir=data_dir, cwd=tmp_path)
    assert result.returncode != 0 and "not an empty folder" in result.stderr
    assert (used / "something").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert sublane("backup", str(empty), data_dir=data_dir, cwd=tmp_path).returncode == 0
    assert (empty / "manifest.json").exists()
    nowhere = sublane("backup", str(tmp_path / "x"), data_dir=tmp_path / "no-data", cwd=tmp_path)
    assert nowhere.returncode != 0 and "no database" in nowhere.stderr


def test_ops_9_a_second_gateway_refuses_a_served_data_folder(
    make_pool: Callable[..., Pool], tmp_path: Path
) -> None:
    pool = make_pool()
    result = subprocess.run(
        [SUBLANE, "serve", "--port", "0"],
        env={
            **{key: value for key, value in os.environ.items() if not key.startswith("SUBLANE_")},
            "SUBLANE_DATA_DIR": str(pool.gateway.settings.data_dir),
        },
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0 and "in use by a running SubLane" in result.stderr
