"""Conversation bindings (AFF-7): digest of (group, conversation key) → account, scope ``auto``.

Bindings live in the ``affinity`` table and survive restarts; a bounded in-memory map in front of
it means the database is read once per conversation (and per process start), and written when a
binding is made or moves (AFF-4).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

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
        self._cache: OrderedDict[str, tuple[int, str | None]] = OrderedDict()

    async def get(self, digest: str) -> int | None:
        """The bound account, or ``None``."""
        binding = await self.binding(digest)
        return binding[0] if binding is not None else None

    async def binding(self, digest: str) -> tuple[int, str | None] | None:
        """``(account, model the binding was made or last used with)``, or ``None``."""
        cached = self._cache.get(digest)
        if cached is None:
            cached = await anyio.to_thread.run_sync(self._load, digest)
            self._remember(digest, cached)
        else:
            self._cache.move_to_end(digest)
        return None if cached[0] == _MISSING else cached

    async def bind(self, digest: str, group_id: int, account_id: int, model: str) -> None:
        """Bind (or re-bind) a conversation to an account."""
        self._remember(digest, (account_id, model))
        await anyio.to_thread.run_sync(self._store, digest, group_id, account_id, model)

    def forget_account(self, account_id: int) -> None:
        """Drop cached bindings to an account (it was deleted; the table cascades)."""
        for digest in [digest for digest, bound in self._cache.items() if bound[0] == account_id]:
            self._cache[digest] = (_MISSING, None)

    def _remember(self, digest: str, binding: tuple[int, str | None]) -> None:
        self._cache[digest] = binding
        self._cache.move_to_end(digest)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)

    def _load(self, digest: str) -> tuple[int, str | None]:
        with Session(self._engine) as db:
            row = db.get(Affinity, digest)
            return (row.account_id, row.model) if row is not None else (_MISSING, None)

    def _store(self, digest: str, group_id: int, account_id: int, model: str) -> None:
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
                        created_at=now,
                        last_used_at=now,
                    )
                else:
                    row.account_id, row.model, row.last_used_at = account_id, model[:128], now
                db.add(row)
                try:
                    db.commit()
                    return
                except IntegrityError:
                    db.rollback()
