"""Which models each account serves, discovered from the provider and cached.

Discovery is a metadata call (it takes no model-request slot, ADM-10). It runs on demand, once per
account per ``TTL_S``, one at a time per account; when it fails the provider's known catalogue
stands in for a short while, so a flaky discovery never makes a model vanish.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from sublane_core import Clock

_log = logging.getLogger("sublane.models")

TTL_S = 900.0
FALLBACK_TTL_S = 60.0

Discover = Callable[[int], Awaitable[list[str]]]
Aliaser = Callable[[frozenset[str]], frozenset[str]]


class ModelCatalog:
    """Per-account model sets with single-flight discovery."""

    def __init__(
        self,
        clock: Clock,
        discoverers: Mapping[str, Discover],
        fallbacks: Mapping[str, frozenset[str]],
        aliasers: Mapping[str, Aliaser] | None = None,
    ) -> None:
        """``fallbacks``: what each provider is known to serve, used only while discovery fails;
        ``aliasers``: the other names each provider accepts for its models (CAT-2)."""
        self._clock = clock
        self._discoverers = discoverers
        self._fallbacks = fallbacks
        self._aliasers = aliasers or {}
        self._models: dict[int, tuple[frozenset[str], frozenset[str], float]] = {}
        self._inflight: dict[int, asyncio.Task[tuple[frozenset[str], frozenset[str]]]] = {}

    def forget(self, account_id: int) -> None:
        self._models.pop(account_id, None)

    def cached(self, account_id: int) -> frozenset[str] | None:
        entry = self._models.get(account_id)
        return entry[0] if entry is not None else None

    async def models_of(self, account_id: int, provider: str) -> frozenset[str]:
        """The names the account serves — its models and their aliases — discovering when stale."""
        return (await self._entry(account_id, provider))[1]

    async def listed_of(self, account_id: int, provider: str) -> frozenset[str]:
        """The account's models as listed to clients (native ids, no aliases)."""
        return (await self._entry(account_id, provider))[0]

    async def _entry(self, account_id: int, provider: str) -> tuple[frozenset[str], frozenset[str]]:
        entry = self._models.get(account_id)
        if entry is not None and entry[2] > self._clock.monotonic():
            return entry[0], entry[1]
        task = self._inflight.get(account_id)
        if task is None:
            task = asyncio.ensure_future(self._discover(account_id, provider))
            self._inflight[account_id] = task
            task.add_done_callback(lambda _task: self._inflight.pop(account_id, None))
        return await asyncio.shield(task)

    async def _discover(self, account_id: int, provider: str) -> tuple[frozenset[str], frozenset[str]]:
        discover = self._discoverers.get(provider)
        known = self._fallbacks.get(provider, frozenset())
        if discover is None:
            models, ttl = known, TTL_S
        else:
            try:
                models, ttl = frozenset(await discover(account_id)), TTL_S
            except Exception as exc:  # any failure: fall back, try again soon
                _log.warning("model discovery for account %s failed: %s", account_id, type(exc).__name__)
                models, ttl = known, FALLBACK_TTL_S
            if not models:
                models, ttl = known, FALLBACK_TTL_S
        aliaser = self._aliasers.get(provider)
        served = models | aliaser(models) if aliaser is not None else models
        self._models[account_id] = (models, served, self._clock.monotonic() + ttl)
        return models, served
