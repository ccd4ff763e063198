"""``sublane rotate-key``: seal every sealed value with a new credential key (SCALE-8).

Every column the schema marks sealed (``sublane_core.sealed_columns``: credentials, proxy URLs, TOTP
secrets, webhook secrets, the key check) is opened with the current key and sealed with the new one
in one transaction, so a key that leaked can be replaced without losing an account.

- With a ``credentials.key`` file: a new key is made and written first as ``credentials.key.new``;
  after the transaction the old file is kept as ``credentials.key.old-<UTC time>`` and the new one
  takes its name. The data folder must not be served meanwhile (its lock is taken).
- With ``SUBLANE_CREDENTIALS_KEY`` (replicas on PostgreSQL): the new key is read from standard input
  (its base64url text), and every replica must be stopped first and given it before it starts again.
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from pathlib import Path

from sublane_core import (
    CredentialCipher,
    CredentialDecryptError,
    Settings,
    create_db_engine,
    decode_key,
    reseal_database,
)
from sublane_gateway._credential_key import credentials_key
from sublane_gateway._data_folder import DataFolderLock


class RotateRefused(Exception):
    """The key cannot be changed; the message says why. Nothing was changed."""


def _write_key(path: Path, key: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.urlsafe_b64encode(key).rstrip(b"=") + b"\n")
        handle.flush()
        os.fsync(handle.fileno())


def rotate_key(settings: Settings, new_key_text: str | None = None) -> int:
    """Re-seal the database of ``settings`` under a new key; the number of values re-sealed.

    ``new_key_text`` is required (and only used) when the key comes from ``SUBLANE_CREDENTIALS_KEY``.
    """
    from_environment = settings.credentials_key is not None
    if from_environment:
        if not new_key_text:
            raise RotateRefused("give the new key (base64url, 32 bytes) on standard input")
        new_key = decode_key(new_key_text, "the new key")
    else:
        new_key = secrets.token_bytes(32)
    with DataFolderLock(settings.data_dir):
        engine = create_db_engine(settings.effective_database_url)
        try:
            old_key = credentials_key(settings, engine)
            if old_key == new_key:
                raise RotateRefused("the new key is the current key")
            key_path = settings.credentials_key_path
            staged = key_path.with_name(key_path.name + ".new")
            if not from_environment:
                _write_key(staged, new_key)  # on disk before any value is sealed with it
            try:
                with engine.begin() as connection:
                    changed = reseal_database(
                        connection, CredentialCipher(old_key), CredentialCipher(new_key)
                    )
            except CredentialDecryptError:
                staged.unlink(missing_ok=True)
                raise RotateRefused(
                    "a stored value does not open with the current key; nothing changed"
                ) from None
        finally:
            engine.dispose()
        if not from_environment:
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            key_path.rename(key_path.with_name(f"{key_path.name}.old-{stamp}"))
            staged.rename(key_path)
    return changed
