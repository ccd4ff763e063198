"""Which models each account serves, discovered from its provider and stored (CAT-1).

A catalogue is fresh for ``FRESH_S`` (15 min); a stale one is still served while a refresh runs in
the background; one older than ``MAX_AGE_S`` (24 h) is not used for routing (the call waits for a
discovery instead, and answers ``model_catalog_unavailable`` when that fails, CAT-4). Discovery is a
metadata call (it takes no model-request slot, ADM-10); at most ``MAX_DISCOVERIES`` run at once,
one per account at a time; a failed one is not retried for ``RETRY_S``. Catalogues are kept in the
``account_models`` table, so a restart serves the last known ones at once; re-authorization,
enable/disable and deletion forget them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, delete, select

from sublane_core import AccountModels, Clock, SubLaneError

_log = logging.getLogger("sublane.models")

FRESH_S = 900.0
MAX_AGE_S = 86_400.0
RETRY_S = 30.0
MAX_DISCOVERIES = 2

Discover = Callable[[int], Awaitable[list[str]]]
Aliaser = Callable[[frozenset[str]], frozenset[str]]


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    models: frozenset[str]  # native ids, as listed to clients
    served: frozenset[str]  # the ids and their aliases (CAT-2), for capability
    discovered_at: float  # wall clock


class ModelCatalog:
    """Per-account catalogues with stored state, single-flight and bounded discovery."""

    retry_after_s = int(RETRY_S)

    def __init__(
        self,
        clock: Clock,
        discoverers: Mapping[str, Discover],
        aliasers: Mapping[str, Aliaser] | None = None,
        engine: Engine | None = None,
    ) -> None:
        self._clock = clock
        self._discoverers = discoverers
        self._aliasers = aliasers or {}
        self._engine = engine
        self._entries: dict[int, CatalogueEntry] = {}
        self._failed_at: dict[int, float] = {}
        self._errors: dict[int, SubLaneError] = {}
        self._inflight: dict[int, asyncio.Task[CatalogueEntry | None]] = {}
        self._slots = asyncio.Semaphore(MAX_DISCOVERIES)
        self._loaded = engine is None
        self._load_lock = asyncio.Lock()

    # -- reading ----------------------------------------------------------------------------------

    async def lookup(self, account_id: int, provider: str) -> frozenset[str] | None:
        """The names the account serves (models and aliases); ``None`` when its catalogue is
        unknown or over-age and could not be discovered now (CAT-4)."""
        entry = await self.entry(account_id, provider)
        return entry.served if entry is not None else None

    def ready(self, account_id: int, provider: str) -> frozenset[str] | None:
        """The names the account serves when they are known without waiting: a fresh catalogue,
        or a stale one (a refresh then starts in the background, as :meth:`entry` does). ``None``
        when only :meth:`lookup` can tell (not loaded yet, unknown, over-age: a discovery is due).

        The ready path of a model call: a dictionary read, no task, no await."""
        if not self._loaded:
            return None
        entry = self._entries.get(account_id)
        if entry is None:
            return None
        age = self._clock.time() - entry.discovered_at
        if age < FRESH_S:
            return entry.served
        if age < MAX_AGE_S:
            self._start(account_id, provider)  # CAT-1: stale is served while refreshed
            return entry.served
        return None

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]:
        """For eligibility (``ModelSupport``): an unknown catalogue serves nothing."""
        return await self.lookup(account_id, provider) or frozenset()

    async def listed_of(self, account_id: int, provider: str) -> frozenset[str]:
        """The account's models as listed to clients (native ids, no aliases)."""
        entry = await self.entry(account_id, provider)
        return entry.models if entry is not None else frozenset()

    def cached(self, account_id: int) -> frozenset[str] | None:
        entry = self._entries.get(account_id)
        return entry.models if entry is not None else None

    def failure(self, account_id: int) -> SubLaneError | None:
        """Why the account's last discovery failed, when the account itself was the reason."""
        return self._errors.get(account_id)

    def state(self, account_id: int) -> tuple[str, float | None]:
        """``(fresh|stale|over_age|unknown, discovered_at)`` for views."""
        entry = self._entries.get(account_id)
        if entry is None:
            return "unknown", None
        age = self._clock.time() - entry.discovered_at
        state = "fresh" if age < FRESH_S else "stale" if age < MAX_AGE_S else "over_age"
        return state, entry.discovered_at

    async def entry(self, account_id: int, provider: str) -> CatalogueEntry | None:
        """The usable catalogue: fresh; stale (refreshing in the background); else a discovery now."""
        if not self._loaded:
            await self._load()
        entry = self._entries.get(account_id)
        if entry is not None:
            age = self._clock.time() - entry.discovered_at
            if age < FRESH_S:
                return entry
            if age < MAX_AGE_S:
                self._start(account_id, provider)  # CAT-1: stale is served while refreshed
                return entry
        failed = self._failed_at.get(account_id)
        if (
            failed is not None
            and self._clock.monotonic() - failed < RETRY_S
            and account_id not in self._inflight
        ):
            return None
        return await asyncio.shield(self._start(account_id, provider))

    # -- changing ---------------------------------------------------------------------------------

    def forget(self, account_id: int) -> None:
        """Re-authorization, enable/disable or deletion: the catalogue is discovered anew (CAT-1)."""
        self._entries.pop(account_id, None)
        self._failed_at.pop(account_id, None)
        self._errors.pop(account_id, None)
        if self._engine is not None:
            # Synchronously (one small write, on a rare admin change): a discovery that follows must
            # not find the old row, nor have its new row deleted by a late write.
            try:
                with Session(self._engine) as db:
                    db.exec(delete(AccountModels).where(col(AccountModels.account_id) == account_id))
                    db.commit()
            except Exception as exc:
                _log.error("could not forget the catalogue of account %s: %s", account_id, type(exc).__name__)

    async def refresh(self, account_id: int, provider: str) -> CatalogueEntry | None:
        """Discover one account's catalogue now (``POST /api/accounts/{id}/models/refresh``):
        ``None`` when the provider could not be read, even if a stored catalogue is still usable
        (the refresh did not happen: ALIAS-1 amendment, a 503 rather than the old list)."""
        self._failed_at.pop(account_id, None)
        task = self._inflight.get(account_id)
        if task is not None:
            await asyncio.shield(task)
        entry = await asyncio.shield(self._start(account_id, provider))
        if account_id in self._failed_at or account_id in self._errors:
            return None
        return entry

    # -- discovery --------------------------------------------------------------------------------

    def _start(self, account_id: int, provider: str) -> asyncio.Task[CatalogueEntry | None]:
        task = self._inflight.get(account_id)
        if task is None:
            task = asyncio.ensure_future(self._discover(account_id, provider))
            self._inflight[account_id] = task
            task.add_done_callback(lambda _task: self._inflight.pop(account_id, None))
        return task

    async def _discover(self, account_id: int, provider: str) -> CatalogueEntry | None:
        discover = self._discoverers.get(provider)
        if discover is None:
            return None
        async with self._slots:  # CAT-1: at most two discoveries at once
            try:
                models = frozenset(await discover(account_id))
            except SubLaneError as exc:
                # The account's own trouble (its credentials): that is the answer, and the vault's
                # refresh schedule (CRED-3), not RETRY_S, says when asking again can help.
                _log.warning("model discovery for account %s failed: %s", account_id, exc.code)
                self._errors[account_id] = exc
                return self._usable(account_id)
            except Exception as exc:  # any other failure: keep what is stored, try again after RETRY_S
                _log.warning("model discovery for account %s failed: %s", account_id, type(exc).__name__)
                self._errors.pop(account_id, None)
                models = frozenset()
        if not models:
            self._failed_at[account_id] = self._clock.monotonic()
            return self._usable(account_id)
        aliaser = self._aliasers.get(provider)
        served = models | aliaser(models) if aliaser is not None else models
        entry = CatalogueEntry(models, served, self._clock.time())
        self._entries[account_id] = entry
        self._failed_at.pop(account_id, None)
        self._errors.pop(account_id, None)
        if self._engine is not None:
            await self._save(account_id, entry)
        return entry

    def _usable(self, account_id: int) -> CatalogueEntry | None:
        """After a failed discovery: what is stored, unless it is over-age (CAT-4)."""
        entry = self._entries.get(account_id)
        usable = entry is not None and self._clock.time() - entry.discovered_at < MAX_AGE_S
        return entry if usable else None

    # -- storage ----------------------------------------------------------------------------------

    async def _load(self) -> None:
        async with self._load_lock:
            if self._loaded:
                return
            rows = await anyio.to_thread.run_sync(self._read_rows)
            for row in rows:
                self._entries.setdefault(
                    row.account_id,
                    CatalogueEntry(frozenset(row.models), frozenset(row.served), row.discovered_at),
                )
            self._loaded = True

    def _read_rows(self) -> list[AccountModels]:
        assert self._engine is not None
        with Session(self._engine) as db:
            return list(db.exec(select(AccountModels)))

    async def _save(self, account_id: int, entry: CatalogueEntry) -> None:
        def write() -> None:
            assert self._engine is not None
            with Session(self._engine) as db:
                row = db.get(AccountModels, account_id) or AccountModels(account_id=account_id)
                row.models = sorted(entry.models)
                row.served = sorted(entry.served)
                row.discovered_at = entry.discovered_at
                db.add(row)
                db.commit()

        try:
            await anyio.to_thread.run_sync(write)
        except Exception as exc:  # the catalogue still serves from memory; a restart rediscovers
            _log.error("could not store the catalogue of account %s: %s", account_id, type(exc).__name__)
