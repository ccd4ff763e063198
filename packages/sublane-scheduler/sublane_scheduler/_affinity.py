"""Conversation bindings (AFF-7): digest of (group, conversation key) → account, scope ``auto``.

Bindings live in the ``affinity`` table and survive restarts; a bounded in-memory map in front of
it means the database is read once per conversation (and per process start), and written when a
binding is made or moves (AFF-4).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from sublane_core import AFFINITY_SCOPE_AUTO, Affinity, Clock

MAX_CACHED = 100_000
_MISSING = -1


def binding_digest(group_id: int, conversation_key: str) -> str:
    """The stored key of a conversation: SHA-256 of group and key (the key itself is never stored)."""
    return hashlib.sha256(f"{group_id}\x00{conversation_key}".encode()).hexdigest()


class AffinityStore:
    """Reads and writes bindings, with a least-recently-used cache in front of the table."""

    def __init__(self, engine: Engine, clock: Clock, max_cached: int = MAX_CACHED) -> None:
        self._engine = engine
        self._clock = clock
        self._max = max_cached
        # digest → (account, model, owner); owner: the user who made the binding (REVIEW-1)
        self._cache: OrderedDict[str, tuple[int, str | None, int | None]] = OrderedDict()
        #: With replicas (SCALE-2): told each binding made, moved or removed here once it is stored,
        #: so the others drop what they cached of it (:meth:`evict`).
        self.on_changed: Callable[[str], None] | None = None

    async def get(self, digest: str) -> int | None:
        """The bound account, or ``None``."""
        binding = await self.binding(digest)
        return binding[0] if binding is not None else None

    async def binding(self, digest: str) -> tuple[int, str | None] | None:
        """``(account, model the binding was made or last used with)``, or ``None``."""
        entry = await self._entry(digest)
        return None if entry[0] == _MISSING else (entry[0], entry[1])

    async def owned_binding(self, digest: str) -> tuple[int, int | None] | None:
        """``(account, the user who made the binding)``, or ``None`` (REVIEW-1: a parent's binding
        is offered only to the same user)."""
        entry = await self._entry(digest)
        return None if entry[0] == _MISSING else (entry[0], entry[2])

    async def bind(
        self, digest: str, group_id: int, account_id: int, model: str, user_id: int | None = None
    ) -> None:
        """Bind (or re-bind) a conversation to an account, remembering who made it."""
        self._remember(digest, (account_id, model, user_id))
        await anyio.to_thread.run_sync(self._store, digest, group_id, account_id, model, user_id)
        if self.on_changed is not None:
            self.on_changed(digest)

    async def forget(self, digest: str, account_id: int) -> None:
        """Remove a conversation's binding if it still names ``account_id`` (FAIL-2)."""
        cached = self._cache.get(digest)
        if cached is not None and cached[0] == account_id:
            self._remember(digest, (_MISSING, None, None))
        await anyio.to_thread.run_sync(self._delete, digest, account_id)
        if self.on_changed is not None:
            self.on_changed(digest)

    def evict(self, digest: str) -> None:
        """Another replica changed the binding: the next read goes to the database."""
        self._cache.pop(digest, None)

    def evict_all(self) -> None:
        """Changes from other replicas may have been missed: read every binding anew."""
        self._cache.clear()

    async def _entry(self, digest: str) -> tuple[int, str | None, int | None]:
        cached = self._cache.get(digest)
        if cached is None:
            cached = await anyio.to_thread.run_sync(self._load, digest)
            self._remember(digest, cached)
        else:
            self._cache.move_to_end(digest)
        return cached

    def forget_account(self, account_id: int) -> None:
        """Drop cached bindings to an account (it was deleted; the table cascades)."""
        for digest in [digest for digest, bound in self._cache.items() if bound[0] == account_id]:
            self._cache[digest] = (_MISSING, None, None)

    def _remember(self, digest: str, binding: tuple[int, str | None, int | None]) -> None:
        self._cache[digest] = binding
        self._cache.move_to_end(digest)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)

    def _load(self, digest: str) -> tuple[int, str | None, int | None]:
        with Session(self._engine) as db:
            row = db.get(Affinity, digest)
            return (row.account_id, row.model, row.user_id) if row is not None else (_MISSING, None, None)

    def _delete(self, digest: str, account_id: int) -> None:
        with Session(self._engine) as db:
            row = db.get(Affinity, digest)
            if row is not None and row.account_id == account_id:
                db.delete(row)
                db.commit()

    def _store(self, digest: str, group_id: int, account_id: int, model: str, user_id: int | None) -> None:
        now = self._clock.time()
        for _attempt in range(2):  # two first bindings of one conversation may race: then update
            with Session(self._engine) as db:
                row = db.get(Affinity, digest)
                if row is None:
                    row = Affinity(
                        digest=digest,
                        scope=AFFINITY_SCOPE_AUTO,
                        group_id=group_id,
                        account_id=account_id,
                        model=model[:128],
                        user_id=user_id,
                        created_at=now,
                        last_used_at=now,
                    )
                else:
                    row.account_id, row.model, row.last_used_at = account_id, model[:128], now
                    if user_id is not None:
                        row.user_id = user_id
                db.add(row)
                try:
                    db.commit()
                    return
                except IntegrityError:
                    db.rollback()
