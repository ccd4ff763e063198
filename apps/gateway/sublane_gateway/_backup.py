"""``sublane backup DEST`` and ``sublane restore SRC`` (OPS-9).

A backup is a folder with three files: ``sublane.db``, a consistent copy of the database taken with
SQLite's online backup API (in one step: a read transaction, so writers carry on meanwhile under
WAL), ``credentials.key``, without which the copied credentials cannot be opened, and
``manifest.json`` (schema revision, counts, a SHA-256 per file). The folder appears under its name
only once complete: it is written beside it under a hidden name and renamed at the end, so a
backup job cut short never leaves something that looks like a backup.

Before the rename the copy must pass ``PRAGMA integrity_check`` and the key must open a stored
credential. A restore checks the manifest and the checksums, refuses a schema this SubLane does not
know (a backup from a newer version) and a data folder a running SubLane holds, moves what the
folder held aside (``*.pre-restore-<time>``) and puts the copy in place; the next ``sublane serve``
upgrades an older schema as usual. A data folder given its key in ``SUBLANE_CREDENTIALS_KEY`` that
is not the backup's gets the database with every sealed value re-sealed under that key (SCALE-8),
and no ``credentials.key`` of the backup's beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sublane_core import (
    CredentialCipher,
    CredentialDecryptError,
    CredentialKeyError,
    Settings,
    decode_key,
    head_revision,
    known_revisions,
    load_or_create_key,
    reseal_database,
)
from sublane_gateway._data_folder import DataFolderBusy, DataFolderLock

MANIFEST = "manifest.json"
DATABASE = "sublane.db"
KEY = "credentials.key"
KIND = "sublane-backup"
FORMAT = 1
SQLITE_TIMEOUT_S = 30.0
_CHUNK = 1 << 20


class BackupError(Exception):
    """A backup or restore that cannot be done; the message says why and what to do."""


def database_file(settings: Settings) -> Path:
    """The SQLite file of ``settings``; other databases are backed up with their own tools."""
    url = sa.make_url(settings.effective_database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        raise BackupError(
            f"sublane backup copies the embedded SQLite database; back up {url.get_backend_name()} "
            "with its own tools, and credentials.key with it"
        )
    return Path(url.database)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_online(source: Path, target: Path) -> None:
    """A consistent copy of a live database, as one self-contained file (no ``-wal`` beside it)."""
    src = sqlite3.connect(source, timeout=SQLITE_TIMEOUT_S)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)  # all pages in one step: one read snapshot, writers are not held up
            dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
    finally:
        src.close()
    os.chmod(target, 0o600)


def _inspect(database: Path, key_file: Path) -> dict[str, Any]:
    """Integrity, schema revision and counts of a copy, and that ``key_file`` opens its credentials."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        integrity = [row[0] for row in connection.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            raise BackupError(f"{database} fails integrity_check: {'; '.join(integrity[:3])}")
        try:
            revision = connection.execute("SELECT version_num FROM alembic_version").fetchone()
            counts = {
                table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
                for table in ("accounts", "users", "api_keys")
            }
            sealed = connection.execute("SELECT credentials FROM accounts LIMIT 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{database} is not a SubLane database ({exc})") from None
    finally:
        connection.close()
    if revision is None:
        raise BackupError(f"{database} has no schema revision; run sublane migrate on it first")
    try:
        key = load_or_create_key(key_file, create=False)
    except CredentialKeyError as exc:
        raise BackupError(str(exc)) from None
    if sealed is not None:
        try:
            CredentialCipher(key).decrypt(sealed[0])
        except CredentialDecryptError:
            raise BackupError(
                "credentials.key does not open the stored credentials: this key belongs to another database"
            ) from None
    return {"schema_revision": str(revision[0]), "counts": counts}


def take_backup(settings: Settings, dest: Path, *, now: float | None = None) -> dict[str, Any]:
    """Write a backup of the (running or stopped) data folder of ``settings`` into ``dest``.

    ``dest`` must not exist or be an empty folder. Returns the manifest.
    """
    database = database_file(settings)
    key_path = settings.credentials_key_path
    if not database.exists():
        raise BackupError(f"there is no database at {database}")
    if not key_path.exists():
        raise BackupError(f"{key_path} is missing; a backup without it could never open the credentials")
    dest = dest.absolute()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty folder; choose a new one")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(mode=0o700)
    try:
        _copy_online(database, staging / DATABASE)
        _write_private(staging / KEY, key_path.read_bytes())
        facts = _inspect(staging / DATABASE, staging / KEY)
        if facts["schema_revision"] not in known_revisions():
            raise BackupError(
                f"the database is at schema {facts['schema_revision']}, unknown to this SubLane"
            )
        from sublane_gateway import __version__

        manifest = {
            "kind": KIND,
            "format": FORMAT,
            "created_at": time.time() if now is None else now,
            "sublane_version": __version__,
            **facts,
            "files": {
                name: {"bytes": (staging / name).stat().st_size, "sha256": _sha256(staging / name)}
                for name in (DATABASE, KEY)
            },
        }
        _write_private(staging / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
        _fsync(staging / DATABASE)
        _fsync(staging)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
        _fsync(dest.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def read_manifest(src: Path) -> dict[str, Any]:
    """The manifest of the backup in ``src``, after checking that every file is there, intact."""
    try:
        manifest = json.loads((src / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupError(
            f"{src} holds no {MANIFEST}: it is not a backup written by sublane backup"
        ) from None
    except ValueError:
        raise BackupError(f"{src / MANIFEST} is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise BackupError(f"{src / MANIFEST} is not a SubLane backup manifest")
    if manifest.get("format") != FORMAT:
        raise BackupError(f"backup format {manifest.get('format')!r} is not one this SubLane reads")
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != {DATABASE, KEY}:
        raise BackupError(f"{src / MANIFEST} does not list {DATABASE} and {KEY}")
    for name, facts in files.items():
        path = src / name
        if not path.is_file():
            raise BackupError(f"{path} is missing")
        if not isinstance(facts, dict) or _sha256(path) != facts.get("sha256"):
            raise BackupError(f"{path} does not match its checksum in the manifest: the backup is damaged")
    if not isinstance(manifest.get("schema_revision"), str):
        raise BackupError(f"{src / MANIFEST} names no schema revision")
    return manifest


def _reseal_copy(database: Path, backup_key: bytes, configured: bytes) -> None:
    """Re-seal every sealed value of the copy at ``database`` from the backup's key to ``configured``."""
    engine = sa.create_engine(f"sqlite:///{database.as_posix()}")
    try:
        with engine.begin() as connection:
            reseal_database(connection, CredentialCipher(backup_key), CredentialCipher(configured))
    except CredentialDecryptError:
        raise BackupError("credentials.key of the backup does not open every sealed value in it") from None
    finally:
        engine.dispose()


def restore_backup(settings: Settings, src: Path) -> dict[str, Any]:
    """Put the backup in ``src`` into the stopped data folder of ``settings``; returns its manifest.

    What the folder held before is kept beside it as ``<name>.pre-restore-<UTC time>``.
    """
    manifest = read_manifest(src)
    revision = manifest["schema_revision"]
    if revision not in known_revisions():
        raise BackupError(
            f"the backup is at schema {revision}, newer than this SubLane knows (it is at "
            f"{head_revision()}): restore it with the SubLane version that took it, or a newer one"
        )
    database = database_file(settings)
    key_path = settings.credentials_key_path
    reseal_to = None
    if settings.credentials_key is not None:
        try:
            configured = decode_key(settings.credentials_key.get_secret_value(), "SUBLANE_CREDENTIALS_KEY")
            backup_key = load_or_create_key(src / KEY, create=False)
        except CredentialKeyError as exc:
            raise BackupError(str(exc)) from None
        if configured != backup_key:
            reseal_to = configured
    try:
        lock = DataFolderLock(settings.data_dir)
        lock.acquire()
    except DataFolderBusy as busy:
        raise BackupError(str(busy)) from None
    try:
        database.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = database.with_name(f".{database.name}.restore-{os.getpid()}")
        try:
            shutil.copyfile(src / DATABASE, staging)
            os.chmod(staging, 0o600)
            _fsync(staging)
            _inspect(staging, src / KEY)
            if reseal_to is not None:
                _reseal_copy(staging, load_or_create_key(src / KEY, create=False), reseal_to)
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            # The -wal and -shm of the old database would be replayed into the restored one.
            for path in (database, *(database.with_name(database.name + end) for end in ("-wal", "-shm"))):
                if path.exists():
                    path.rename(path.with_name(f"{path.name}.pre-restore-{stamp}"))
            if key_path.exists():
                key_path.rename(key_path.with_name(f"{key_path.name}.pre-restore-{stamp}"))
            staging.replace(database)
        finally:
            with contextlib.suppress(FileNotFoundError):
                staging.unlink()
        if reseal_to is None:  # else SUBLANE_CREDENTIALS_KEY is the key: the backup's would mislead
            key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_private(key_path, (src / KEY).read_bytes())
        _fsync(database.parent)
    finally:
        lock.release()
    return manifest
