"""Helpers of the quota observer's tests."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session

from sublane_core import Account


def set_revision(engine: Engine, account_id: int, revision: int) -> None:
    """Advance an account's lifecycle revision, as disable/enable or re-authorization does."""
    with Session(engine) as db:
        account = db.get(Account, account_id)
        assert account is not None
        account.lifecycle_revision = revision
        db.add(account)
        db.commit()
