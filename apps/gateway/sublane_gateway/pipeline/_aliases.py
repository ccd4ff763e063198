"""Model aliases per group (ALIAS-1): a request for an alias is routed and sent upstream as its model.

A group's aliases are the built-in defaults — the names real clients send for a provider's models,
given by each provider (:class:`~sublane_providers.SuggestsAliases`) — overlaid with what its
admins stored (``group_aliases``): an entry of the same name overrides a default, an empty model
removes it. A name the group's accounts list themselves is never an alias (their model wins), so a
default cannot hide a model a provider starts to list.

All groups' stored aliases are held in memory, read again after a change (the management route
calls :meth:`GroupAliases.invalidate`); a request that names no alias costs one dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import GroupAlias
from sublane_providers import ProviderAdapter, SuggestsAliases

__all__ = ["GroupAliases", "default_aliases", "effective_aliases"]


def default_aliases(adapters: Iterable[ProviderAdapter]) -> dict[str, str]:
    """The built-in aliases every group starts with: each provider's, the first provider's winning
    a name two suggest."""
    defaults: dict[str, str] = {}
    for adapter in adapters:
        if isinstance(adapter, SuggestsAliases):
            for alias, model in adapter.default_aliases().items():
                defaults.setdefault(alias, model)
    return defaults


def effective_aliases(defaults: Mapping[str, str], stored: Mapping[str, str]) -> dict[str, str]:
    """``alias -> model`` of a group: the defaults, overridden or removed (``""``) by ``stored``."""
    aliases = dict(defaults)
    for alias, model in stored.items():
        if model:
            aliases[alias] = model
        else:
            aliases.pop(alias, None)
    return aliases


class GroupAliases:
    """Every group's effective aliases, cached."""

    def __init__(self, engine: Engine, defaults: Mapping[str, str]) -> None:
        self._engine = engine
        self.defaults = dict(defaults)
        self._by_group: dict[int, dict[str, str]] | None = None
        self._generation = 0

    def invalidate(self) -> None:
        """A group's aliases changed: read them again before the next use."""
        self._by_group = None
        self._generation += 1

    def cached(self, group_id: int) -> dict[str, str] | None:
        """The group's effective aliases when they are loaded (no await); ``None`` otherwise."""
        by_group = self._by_group
        return None if by_group is None else by_group.get(group_id, self.defaults)

    async def of_group(self, group_id: int) -> dict[str, str]:
        """The group's effective aliases."""
        by_group = self._by_group
        if by_group is None:
            generation = self._generation
            stored = await anyio.to_thread.run_sync(self._load)
            by_group = {group: effective_aliases(self.defaults, rows) for group, rows in stored.items()}
            if generation == self._generation:  # no change arrived while reading
                self._by_group = by_group
        return by_group.get(group_id, self.defaults)

    def _load(self) -> dict[int, dict[str, str]]:
        with Session(self._engine) as db:
            stored: dict[int, dict[str, str]] = {}
            for row in db.exec(select(GroupAlias)):
                stored.setdefault(row.group_id, {})[row.alias] = row.model
            return stored
