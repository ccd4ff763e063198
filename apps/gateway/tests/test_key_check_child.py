"""OPS-3's key check as ``sublane serve`` runs it: in a forked child, so that a gateway holding no
credential never loads the AES library (issue #49). The child's verdict must be the same as the
check's in this process: a stored check value opened, a wrong key refused with its message, and
any other failure reported, never taken for a pass."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from sublane_core import CredentialKeyError, create_db_engine
from sublane_gateway._key_check import verify_credentials_key_in_child
from sublane_gateway.testing import make_settings, migrate


def _check_values(url: str) -> int:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            return int(connection.execute(sa.text("SELECT count(*) FROM key_checks")).scalar_one())
    finally:
        engine.dispose()


def test_ops_3_the_check_in_a_child_seals_the_check_value_then_refuses_another_key(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    migrate(settings)
    url = settings.effective_database_url
    key, other = os.urandom(32), os.urandom(32)
    verify_credentials_key_in_child(url, key, "the test's key", 1.0)
    assert _check_values(url) == 1  # written by the child, seen here
    verify_credentials_key_in_child(url, key, "the test's key", 2.0)  # opens it again
    assert _check_values(url) == 1
    with pytest.raises(CredentialKeyError, match="the other key does not open the credentials"):
        verify_credentials_key_in_child(url, other, "the other key", 3.0)


def test_ops_3_a_check_that_fails_otherwise_in_the_child_stops_the_start(tmp_path: Path) -> None:
    url = make_settings(tmp_path).effective_database_url  # never migrated: no key_checks table
    with pytest.raises(RuntimeError, match="the credentials key check failed"):
        verify_credentials_key_in_child(url, os.urandom(32), "the test's key", 1.0)
