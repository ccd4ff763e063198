"""Checks that IDs named in a request exist, so nothing is written half-way."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlmodel import Session, col, select

from sublane_core import SubLaneError


def require_existing(db: Session, table: Any, ids: Iterable[int], what: str) -> list[int]:
    """``ids`` de-duplicated in order; 400 ``invalid_request`` naming the unknown ones."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return wanted
    found = set(db.exec(select(table.id).where(col(table.id).in_(wanted))).all())
    missing = [item for item in wanted if item not in found]
    if missing:
        raise SubLaneError("invalid_request", f"unknown {what} ids: {missing[:20]}")
    return wanted


def get_or_404(db: Session, table: Any, item_id: int, what: str) -> Any:
    """The row with ``item_id`` or 404 ``not_found``."""
    row = db.get(table, item_id)
    if row is None:
        raise SubLaneError("not_found", f"No {what} with id {item_id}.")
    return row
