"""The audit log (OPS-10): who changed what, when; kept 90 days; read by admins only.

Every management route that changes something calls :func:`audit` with the change, in the same
database session and before the same commit as the change itself: the entry and the change are
written together or not at all, and a refused request (4xx, rolled back) leaves no entry. Reads
write nothing. ``action`` is ``<object type>.<verb>`` (``account.limits``, ``key.revoke``); the
summary is built by each route from the fields it changed and then passed through
:func:`clean_summary`, which keeps only short scalars and drops anything named like a secret, so
neither a secret nor a body can reach the log even by mistake.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import APIRouter, Request
from sqlmodel import Session, col, delete, func, select

from sublane_core import AuditEntry, SubLaneError, User, redact
from sublane_gateway._sessions import AdminUser, DbSession
from sublane_gateway._state import gateway_state

router = APIRouter(tags=["audit"])

AUDIT_DAYS = 90
PAGE_SIZE = 50
CHOICES_LIMIT = 200
SHELL_ACTOR = "(shell)"
MAX_ID = 2**63 - 1
_ACTION = re.compile(r"[a-z_]{1,32}\.[a-z_]{1,31}")
_SECRET_NAME = re.compile(r"(?i)password|secret|token|credential|digest|hash|verifier|cookie|hint")
_MAX_TEXT = 128
_MAX_ITEMS = 50
_MAX_DEPTH = 2


def _clean(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        return redact(value)[:_MAX_TEXT]
    if isinstance(value, list | tuple | set | frozenset) and depth < _MAX_DEPTH:
        items = list(value)
        cleaned = [_clean(item, depth + 1) for item in items[:_MAX_ITEMS]]
        return cleaned + ([f"… {len(items) - _MAX_ITEMS} more"] if len(items) > _MAX_ITEMS else [])
    if isinstance(value, Mapping) and depth < _MAX_DEPTH:
        return clean_summary(value, depth + 1)
    return None  # anything else (bytes, objects, deeper nesting) is not a summary


def clean_summary(summary: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """``summary`` with only short scalars, short lists and one level of nesting.

    A key named like a secret (password, token, credentials, …) keeps only a ``True`` value, so
    ``{"password_changed": True}`` survives while a password itself never does.
    """
    result: dict[str, Any] = {}
    for key, value in list(summary.items())[:_MAX_ITEMS]:
        name = str(key)[:64]
        if _SECRET_NAME.search(name) and value is not True:
            continue
        result[name] = _clean(value, depth)
    return result


def change(before: Any, after: Any) -> dict[str, Any] | None:
    """``{"from": before, "to": after}``, or ``None`` when nothing changed."""
    return None if before == after else {"from": before, "to": after}


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`change` for each field of ``after`` (unchanged ones come out ``None``, left out later)."""
    return {name: change(before.get(name), value) for name, value in after.items()}


def replaced(before: Iterable[int], after: Iterable[int]) -> dict[str, Any]:
    """What replacing the ID set ``before`` with ``after`` added and removed."""
    old, new = set(before), set(after)
    return {"added": sorted(new - old), "removed": sorted(old - new), "count": len(new)}


def record_action(
    db: Session,
    *,
    actor: User | None,
    action: str,
    object_id: int | None = None,
    summary: Mapping[str, Any] | None = None,
    at: float | None = None,
) -> None:
    """Add an entry to ``db``'s transaction (the caller commits) and drop entries past 90 days.

    ``actor`` ``None`` is the shell (``sublane admin …``). ``summary`` values that are ``None`` are
    left out.
    """
    if not _ACTION.fullmatch(action):
        raise ValueError(f"audit action {action!r} is not <object>.<verb>")
    now = time.time() if at is None else at
    with db.no_autoflush:  # the caller's pending change is flushed by its own commit, where it handles errors
        db.exec(delete(AuditEntry).where(col(AuditEntry.at) < now - AUDIT_DAYS * 86_400))
    kept = {key: value for key, value in (summary or {}).items() if value is not None}
    db.add(
        AuditEntry(
            at=now,
            actor_id=actor.id if actor is not None else None,
            actor_name=actor.username if actor is not None else SHELL_ACTOR,
            action=action,
            object_type=action.partition(".")[0],
            object_id=object_id,
            summary=clean_summary(kept) or None,
        )
    )


def audit(
    db: Session, request: Request, actor: User, action: str, object_id: int | None = None, **summary: Any
) -> None:
    """:func:`record_action` for a management route, at the gateway clock's time."""
    record_action(
        db,
        actor=actor,
        action=action,
        object_id=object_id,
        summary=summary,
        at=gateway_state(request).clock.time(),
    )


# -- reading --------------------------------------------------------------------------------------


def entry_view(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "at": entry.at,
        "actor_id": entry.actor_id,
        "actor_name": entry.actor_name,
        "action": entry.action,
        "object_type": entry.object_type,
        "object_id": entry.object_id,
        "summary": entry.summary or {},
    }


def _param(request: Request, name: str) -> str | None:
    raw = request.query_params.get(name)
    return raw.strip() if raw is not None and raw.strip() else None


def _identifier(request: Request, name: str) -> int | None:
    raw = _param(request, name)
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not 1 <= int(raw) <= MAX_ID:
        raise SubLaneError("invalid_request", f"{name} must be a positive integer")
    return int(raw)


def _expire(db: Session, request: Request) -> None:
    now = gateway_state(request).clock.time()
    db.exec(delete(AuditEntry).where(col(AuditEntry.at) < now - AUDIT_DAYS * 86_400))
    db.commit()


@router.get("/api/audit")
def audit_log(request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """Admin mutations of the last 90 days, newest first, 50 a page.

    Filters: `actor_id` (a user's ID), `action` (exact, like `account.limits`); `cursor` is the
    `next_cursor` of the previous page.
    """
    actor_id = _identifier(request, "actor_id")
    cursor = _identifier(request, "cursor")
    action = _param(request, "action")
    if action is not None and not _ACTION.fullmatch(action):
        raise SubLaneError("invalid_request", "action must look like account.limits")
    _expire(db, request)
    query = select(AuditEntry).order_by(col(AuditEntry.id).desc()).limit(PAGE_SIZE + 1)
    if actor_id is not None:
        query = query.where(col(AuditEntry.actor_id) == actor_id)
    if action is not None:
        query = query.where(col(AuditEntry.action) == action)
    if cursor is not None:
        query = query.where(col(AuditEntry.id) < cursor)
    entries = list(db.exec(query))
    more = len(entries) > PAGE_SIZE
    entries = entries[:PAGE_SIZE]
    return {
        "items": [entry_view(entry) for entry in entries],
        "next_cursor": str(entries[-1].id) if more and entries else None,
    }


@router.get("/api/audit/filters")
def audit_filters(request: Request, _admin: AdminUser, db: DbSession) -> dict[str, Any]:
    """The actors and actions found in the retained audit log, for filter lists."""
    _expire(db, request)
    latest = (  # each actor under the name of their newest entry
        select(func.max(AuditEntry.id))
        .where(col(AuditEntry.actor_id).is_not(None))
        .group_by(col(AuditEntry.actor_id))
    )
    actors = db.exec(
        select(AuditEntry.actor_id, AuditEntry.actor_name)
        .where(col(AuditEntry.id).in_(latest))
        .order_by(col(AuditEntry.actor_name))
        .limit(CHOICES_LIMIT)
    ).all()
    actions = db.exec(
        select(AuditEntry.action).distinct().order_by(col(AuditEntry.action)).limit(CHOICES_LIMIT)
    ).all()
    return {
        "actors": [{"id": actor_id, "name": name} for actor_id, name in actors],
        "actions": list(actions),
    }
