"""Each provider's effective client version (CLIENT-2), persisted and shared by the replicas.

effective = the highest of the version built into the provider's package, the highest well-formed
native client version seen in a successful model call in the last 30 days, and the admin's pin.

The seen version is kept as one row per provider (``client_versions``): the highest version and
when it was last seen. A version seen again is written at most once a day; once its 30 days are
over, it no longer counts and the next one seen (even a lower one) takes its place. A claimed
version counts only when the upstream accepted it (a successful call) and it is plausible (at most
one major release past the built-in one, :func:`~sublane_providers.plausible_version`).

Every change is written to the database and told to the other replicas (``on_changed``: the
coordination publishes it; they read the row again), so all replicas present the same identity.
The effective version of each provider is pushed into its adapter's identity, where metadata calls
(refresh, quota, discovery, sign-in) read it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from sublane_core import ClientVersion, Clock
from sublane_providers import ClientIdentity, newest_version, parse_version, plausible_version, version_below

_log = logging.getLogger("sublane.client_versions")

SEEN_FOR_S = 30 * 86400.0
#: A version seen again is written at most this often (its 30 days start again).
SEEN_REWRITE_S = 86400.0


@dataclass(slots=True)
class _Row:
    seen: str | None = None
    seen_at: float | None = None
    pinned: str | None = None


class ClientVersions:
    """The effective client version of every provider that has a client identity."""

    def __init__(self, engine: Engine, clock: Clock, identities: Mapping[str, ClientIdentity]) -> None:
        self._engine = engine
        self._clock = clock
        self.identities = dict(identities)
        self._rows: dict[str, _Row] = {name: _Row() for name in self.identities}
        # provider: (effective, until when it holds): asked once per attempt, worked out once per change
        self._memo: dict[str, tuple[str, float]] = {}
        self._generation = 0  # a change from another thread meanwhile: the memo is not stored
        self._lock = threading.Lock()
        #: Told the provider after a change was written (SCALE-2: the coordination publishes it).
        self.on_changed: Callable[[str], None] = lambda _provider: None
        #: Runs a database write off the event loop (the runtime's background work).
        self.in_background: Callable[[Callable[[], None]], None] = lambda work: work()

    # -- reading ---------------------------------------------------------------------------------------

    def effective(self, provider: str) -> str:
        """The provider's effective version now (a seen version past its 30 days no longer counts)."""
        now = self._clock.time()
        memo = self._memo.get(provider)
        if memo is not None and now < memo[1]:
            return memo[0]
        generation = self._generation
        identity = self.identities[provider]
        row = self._rows[provider]
        counts = row.seen_at is not None and now - row.seen_at < SEEN_FOR_S
        effective = newest_version(identity.built_in, row.seen if counts else None, row.pinned)
        effective = effective or identity.built_in
        if generation == self._generation:
            self._memo[provider] = (effective, (row.seen_at or 0.0) + SEEN_FOR_S if counts else float("inf"))
        if identity.effective != effective:
            identity.use(effective)
        return effective

    def _changed(self, provider: str) -> None:
        """A row changed: work the effective version out again (and tell the identity)."""
        self._generation += 1
        self._memo.pop(provider, None)
        self.effective(provider)

    def view(self, provider: str) -> dict[str, Any]:
        """``{"effective","built_in","seen","pinned"}`` of ``GET /api/providers``."""
        row = self._rows[provider]
        fresh = row.seen_at is not None and self._clock.time() - row.seen_at < SEEN_FOR_S
        return {
            "effective": self.effective(provider),
            "built_in": self.identities[provider].built_in,
            "seen": row.seen if fresh else None,
            "pinned": row.pinned,
        }

    # -- changes ---------------------------------------------------------------------------------------

    def saw(self, provider: str, version: str) -> None:
        """A successful native model call carried ``version`` (from the event loop; never blocks)."""
        identity = self.identities.get(provider)
        if identity is None or not plausible_version(version, identity.built_in):
            return
        now = self._clock.time()
        with self._lock:
            row = self._rows[provider]
            stale = row.seen is None or row.seen_at is None or now - row.seen_at >= SEEN_FOR_S
            if stale or version_below(row.seen or "", version):
                row.seen, row.seen_at = version, now
            elif row.seen == version and now - (row.seen_at or 0.0) >= SEEN_REWRITE_S:
                row.seen_at = now
            else:
                return
            seen, seen_at = row.seen, row.seen_at
        self._changed(provider)
        self.in_background(lambda: self._write_seen(provider, seen, seen_at))

    def stage_pin(self, db: Session, provider: str, version: str | None) -> str | None:
        """Write the admin's pin (``None``: none) into ``db``'s transaction; the previous pin.

        The caller commits (with its audit entry), then calls :meth:`pinned`.
        """
        if version is not None and parse_version(version) is None:
            raise ValueError("not a client version")
        row = db.get(ClientVersion, provider) or ClientVersion(provider=provider, updated_at=0)
        previous = row.pinned_version
        row.pinned_version, row.updated_at = version, self._clock.time()
        db.add(row)
        return previous

    def pinned(self, provider: str, version: str | None) -> None:
        """A pin was committed: apply it here and tell the other replicas."""
        with self._lock:
            self._rows[provider].pinned = version
        self._changed(provider)
        self.on_changed(provider)

    def _write_seen(self, provider: str, seen: str | None, seen_at: float | None) -> None:
        try:
            with Session(self._engine) as db:
                row = db.get(ClientVersion, provider) or ClientVersion(provider=provider, updated_at=0)
                stored_fresh = row.seen_at is not None and (seen_at or 0.0) - row.seen_at < SEEN_FOR_S
                if stored_fresh and row.seen_version and version_below(seen or "", row.seen_version):
                    return  # another replica stored a newer one meanwhile
                row.seen_version, row.seen_at, row.updated_at = seen, seen_at, self._clock.time()
                db.add(row)
                db.commit()
        except Exception as exc:  # the in-memory version still applies here
            _log.error("could not store the client version of %s: %s", provider, type(exc).__name__)
            return
        self.on_changed(provider)

    # -- loading ---------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read every provider's row again (start-up, another replica's change; a worker thread)."""
        with Session(self._engine) as db:
            rows = {row.provider: row for row in db.exec(select(ClientVersion))}
        with self._lock:
            for provider, kept in self._rows.items():
                row = rows.get(provider)
                if row is None:
                    kept.seen = kept.seen_at = kept.pinned = None
                    continue
                kept.pinned = row.pinned_version if parse_version(row.pinned_version) else None
                if parse_version(row.seen_version) is not None:
                    kept.seen, kept.seen_at = row.seen_version, row.seen_at
        for provider in self._rows:
            self._changed(provider)
