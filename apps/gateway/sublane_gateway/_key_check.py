"""OPS-3: start only with the ``credentials.key`` that sealed this database's credentials.

A wrong but well-formed key used to be accepted: accounts showed ready and every model call
failed with a 500. Now a value sealed with the key is stored the first time the key is used (an
older database proves its key with one stored account instead), and every start opens it.

``sublane serve`` opens it in a forked child (:func:`verify_credentials_key_in_child`): the check
is the only thing a start-up without credentials would seal or open, and the AES library it loads
stays in the server's memory for good once imported (7 MB, issue #49). A fork costs a few
milliseconds and imports nothing anew; the child uses an engine of its own and leaves through
``os._exit`` (none of the parent's connections, files or exit handlers are touched).
"""

from __future__ import annotations

import os
import sys

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import CredentialCipher, CredentialDecryptError, CredentialKeyError, create_db_engine

_WRONG_KEY = 3  # the child's exit status for CredentialKeyError (its message on the pipe)
_FAILED = 4  # anything else (its type and message on the pipe)

CHECK_VALUE = {"sublane": "credentials.key check"}


def verify_credentials_key(engine: Engine, cipher: CredentialCipher, source: str, now: float) -> None:
    """Raise :class:`CredentialKeyError` unless ``cipher`` opens this database; store the check value."""
    with engine.begin() as connection:
        sealed = connection.execute(sa.text("SELECT sealed FROM key_checks ORDER BY id LIMIT 1")).scalar()
        if sealed is not None:
            if _opens(cipher, sealed, CHECK_VALUE):
                return
            raise _wrong_key(source)
        account = connection.execute(sa.text("SELECT credentials FROM accounts ORDER BY id LIMIT 1")).scalar()
        if account is not None and not _opens(cipher, account, None):
            raise _wrong_key(source)
        connection.execute(
            sa.text("INSERT INTO key_checks (sealed, created_at) VALUES (:sealed, :now)"),
            {"sealed": cipher.encrypt(CHECK_VALUE), "now": now},
        )


def _opens(cipher: CredentialCipher, sealed: bytes, expected: dict[str, str] | None) -> bool:
    try:
        opened = cipher.decrypt(sealed)
    except CredentialDecryptError:
        return False
    return expected is None or opened == expected


def _wrong_key(source: str) -> CredentialKeyError:
    return CredentialKeyError(
        f"{source} does not open the credentials stored in this database (it is another key); "
        "give the key the database's credentials were sealed with (restore credentials.key from the "
        "backup taken with the database, or set SUBLANE_CREDENTIALS_KEY to it; see README)"
    )


def verify_credentials_key_in_child(database_url: str, key: bytes, source: str, now: float) -> None:
    """:func:`verify_credentials_key` in a forked child of this process (``sublane serve``, before
    it serves, while it has no thread and, its engine disposed, no database connection open: SQLite
    must not see a connection carried across a fork). Where ``os.fork`` does not exist, here."""
    if not hasattr(os, "fork"):
        _verify_on_own_engine(database_url, key, source, now)
        return
    reader, writer = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's lines run in another process)
        os.close(reader)
        _check_and_exit(writer, database_url, key, source, now)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        said = pipe.read().decode("utf-8", "replace")
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == _WRONG_KEY:
        raise CredentialKeyError(said)
    if code != 0:
        raise RuntimeError(f"the credentials key check failed (exit status {code}): {said}")


def _verify_on_own_engine(database_url: str, key: bytes, source: str, now: float) -> None:
    engine = create_db_engine(database_url)
    try:
        verify_credentials_key(engine, CredentialCipher(key), source, now)
    finally:
        engine.dispose()


def _check_and_exit(writer: int, database_url: str, key: bytes, source: str, now: float) -> None:
    status, said = _FAILED, ""
    try:
        _verify_on_own_engine(database_url, key, source, now)
        status = 0
    except CredentialKeyError as exc:
        status, said = _WRONG_KEY, str(exc)
    except BaseException as exc:  # whatever it was, the parent reports it and stops
        said = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            os.write(writer, said.encode("utf-8", "replace"))
        finally:
            os._exit(status)
