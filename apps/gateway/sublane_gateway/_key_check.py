"""OPS-3: start only with the ``credentials.key`` that sealed this database's credentials.

A wrong but well-formed key used to be accepted: accounts showed ready and every model call
failed with a 500. Now a value sealed with the key is stored the first time the key is used (an
older database proves its key with one stored account instead), and every start opens it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import CredentialCipher, CredentialDecryptError, CredentialKeyError

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
