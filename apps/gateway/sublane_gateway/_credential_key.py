"""Which key seals this installation's credentials: ``SUBLANE_CREDENTIALS_KEY`` when set (every replica
of a PostgreSQL installation is given the same, SCALE-1), else the data folder's ``credentials.key``
— created on first use, but never anew while the database holds credentials sealed with a lost one.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sublane_core import CredentialKeyError, Settings, decode_key, load_or_create_key


def credentials_key(settings: Settings, engine: Engine) -> bytes:
    """The credential key of ``settings``, checked against what ``engine``'s database holds."""
    if settings.credentials_key is not None:
        return decode_key(settings.credentials_key.get_secret_value(), "SUBLANE_CREDENTIALS_KEY")
    path = settings.credentials_key_path
    if not path.exists():
        with engine.connect() as connection:
            sealed = connection.execute(sa.text("SELECT count(*) FROM accounts")).scalar_one()
        if sealed:
            raise CredentialKeyError(
                f"{path} is missing but the database holds {sealed} account(s) sealed with it; "
                "restore credentials.key from the backup taken with the database (see README)"
            )
    return load_or_create_key(path)


def key_source(settings: Settings) -> str:
    """Where the key of ``settings`` comes from, for messages (never the key)."""
    return (
        "SUBLANE_CREDENTIALS_KEY"
        if settings.credentials_key is not None
        else str(settings.credentials_key_path)
    )
