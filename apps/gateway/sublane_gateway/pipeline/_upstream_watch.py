"""Upstream changes watched (CLIENT-7): what an upstream answers that SubLane does not know.

Each provider declares what its upstream is known to answer (``UpstreamVocabulary``, in its own
package). The pipeline compares what it has at hand anyway — an SSE event's name (one set lookup
per event), the keys of the terminal event and of a JSON answer it decodes anyway, the code an
error answer was classified with, the models a catalogue read listed — and relays everything as
before. What is new is only noted here, in memory (:meth:`UpstreamWatch.note`: a few dictionary
updates, on the event loop); a background task writes the notes to ``upstream_changes`` every
:data:`FLUSH_S`, off the request path, where every replica on the database sees them:

- the replica whose ``INSERT … ON CONFLICT DO NOTHING`` made a name's row raises the alert
  ``upstream.changed`` in the same transaction: one alert per new name, however many replicas;
- the replica whose update claims the day (``logged_day``) logs the name: once per provider,
  kind and name per UTC day;
- ``sublane_upstream_unknown_total{provider,kind}`` counts what this process saw.

Names are the upstream's text: cut to 200 characters, logged with ``%r``; at most
:data:`MAX_PENDING` distinct names wait for a write (an upstream making names up costs bounded
memory).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Container, Iterable, Mapping
from types import ModuleType
from typing import Any, Final

import anyio.to_thread
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col

from sublane_core import AlertOutbox, Clock, UpstreamChange, current_request_id
from sublane_gateway.pipeline._background import BackgroundTasks
from sublane_providers import (
    KIND_ANSWER_FIELD,
    KIND_CLIENT_VERSION,
    KIND_ERROR,
    KIND_EVENT,
    KIND_MODEL,
    KIND_TERMINAL_FIELD,
    ProviderAdapter,
    UpstreamVocabulary,
)
from sublane_providers import DeclaresVocabulary as _Declares

_log = logging.getLogger("sublane.upstream")

FLUSH_S: Final = 0.5
MAX_PENDING: Final = 1000
MAX_NAME: Final = 200
DAY_S: Final = 86400
EVENT: Final = "upstream.changed"


class AnyName:
    """A container of every name: what a provider without a vocabulary is taken to know."""

    __slots__ = ()

    def __contains__(self, name: object) -> bool:
        return True


ANY_NAME: Final = AnyName()


class EventNames(dict[bytes, str]):
    """A provider's SSE event names by their bytes on the wire, for the relay: a known name is one
    C lookup, in place of decoding it (``sublane_providers.usual_event_name``), so watching costs
    the usual event nothing. A name missing here is decoded by :meth:`__missing__`, and noted
    (with the request of the current task) when the provider declares a vocabulary; for one that
    does not, it is remembered instead (at most :data:`MAX_PENDING` names)."""

    __slots__ = ("_watch",)

    def __init__(self, names: Iterable[str], watch: ProviderWatch | None) -> None:
        super().__init__((name.encode(), name) for name in names)
        self._watch = watch

    def __missing__(self, raw: bytes) -> str:
        name = raw.decode("utf-8", "replace")
        if self._watch is not None:
            self._watch.note(KIND_EVENT, name)
        elif len(self) < MAX_PENDING:
            self[raw] = name
        return name


class ProviderWatch:
    """One provider's vocabulary, read by the pipeline, and the way to tell the watch of news.

    ``event_names`` is what the relay reads each usual event's name from (one C lookup, which
    notes an unknown name on its way); ``events``, the same names as a set, serves the rarer
    events the relay decodes in full."""

    __slots__ = (
        "_watch", "answer_fields", "error_codes", "event_names", "events", "models", "provider",
        "terminal_fields",
    )  # fmt: skip

    def __init__(
        self,
        provider: str,
        watch: UpstreamWatch | None,
        vocabulary: UpstreamVocabulary | None,
        models: frozenset[str],
    ) -> None:
        self.provider = provider
        self._watch = watch
        known: Container[str] = ANY_NAME
        self.events = vocabulary.events if vocabulary is not None else known
        self.answer_fields = vocabulary.answer_fields if vocabulary is not None else known
        self.terminal_fields = vocabulary.terminal_fields if vocabulary is not None else known
        self.error_codes = vocabulary.error_codes if vocabulary is not None else known
        # a provider that names no model of its own (an API key's catalogue is what the key lists)
        # has nothing to compare a catalogue with: none of its models is news
        declared = vocabulary.models | models if vocabulary is not None else frozenset()
        self.models: Container[str] = declared or known
        watched = watch is not None and vocabulary is not None
        self.event_names = EventNames(
            vocabulary.events if vocabulary is not None else (), self if watched else None
        )

    def note(self, kind: str, name: str, request_id: str | None = None) -> None:
        """Something of ``kind`` named ``name`` that this provider's vocabulary lacks was seen."""
        if self._watch is not None:
            self._watch.note(self.provider, kind, name, request_id)

    def answer(self, payload: Mapping[str, Any], request_id: str | None) -> None:
        """The top-level fields of a JSON answer."""
        known = self.answer_fields
        for name in payload:
            if name not in known:
                self.note(KIND_ANSWER_FIELD, name, request_id)

    def terminal(self, payload: Mapping[str, Any], request_id: str | None) -> None:
        """The top-level fields of the event that ended a stream."""
        known = self.terminal_fields
        for name in payload:
            if name not in known:
                self.note(KIND_TERMINAL_FIELD, name, request_id)

    def error(self, code: str | None, request_id: str | None = None) -> None:
        """An error type or code (``http_<status>``, made up when the answer named none, is not news)."""
        if code is not None and code not in self.error_codes and not code.startswith("http_"):
            self.note(KIND_ERROR, code, request_id)

    def catalogue(self, models: Iterable[str]) -> None:
        """The models an account's catalogue read listed."""
        known = self.models
        for model in models:
            if model not in known:
                self.note(KIND_MODEL, model)


#: What a caller that watches nothing passes (tests, benchmarks, providers without a vocabulary).
UNWATCHED: Final = ProviderWatch("", None, None, frozenset())


class _Seen:
    __slots__ = ("count", "first", "last", "request_id")

    def __init__(self, now: float, request_id: str | None) -> None:
        self.count, self.first, self.last, self.request_id = 1, now, now, request_id


class UpstreamWatch:
    """Notes upstream news in memory and writes them in the background (see the module doc)."""

    def __init__(
        self, engine: Engine, clock: Clock, outbox: AlertOutbox, adapters: Mapping[str, ProviderAdapter]
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._outbox = outbox
        self.providers: dict[str, ProviderWatch] = {
            name: ProviderWatch(
                name,
                self,
                adapter.vocabulary if isinstance(adapter, _Declares) else None,
                adapter.fallback_models,
            )
            for name, adapter in adapters.items()
        }
        #: ``sublane_upstream_unknown_total``: what this process saw, by provider and kind.
        self.counts: dict[tuple[str, str], int] = {}
        self.dropped = 0  # names not kept because MAX_PENDING were waiting
        self._pending: dict[tuple[str, str, str], _Seen] = {}
        self._tasks = BackgroundTasks()

    def of(self, provider: str | None) -> ProviderWatch:
        """The watch of ``provider`` (:data:`UNWATCHED` for none)."""
        return self.providers.get(provider or "", UNWATCHED)

    def note(self, provider: str, kind: str, name: str, request_id: str | None = None) -> None:
        """Count one sighting and keep it for the next write (cheap; call it on the event loop, as
        the pipeline does: the writer swaps the pending notes there)."""
        key = (provider, kind)
        self.counts[key] = self.counts.get(key, 0) + 1
        request_id = request_id or current_request_id()
        entry = (provider, kind, name[:MAX_NAME])
        seen = self._pending.get(entry)
        now = self._clock.time()
        if seen is None:
            if len(self._pending) >= MAX_PENDING:
                self.dropped += 1
                return
            self._pending[entry] = _Seen(now, request_id)
            return
        seen.count += 1
        seen.last = now
        if seen.request_id is None:
            seen.request_id = request_id

    def client_version_refused(self, provider: str, version: str, request_id: str | None = None) -> None:
        """CLIENT-3 → CLIENT-7: an upstream refused a client version and named ``version`` as the
        one needed (the send path calls this on each refusal). Listed with the upstream changes
        (kind ``client_version``), alerted once per new version like any new name."""
        self.note(provider, KIND_CLIENT_VERSION, version, request_id)

    # -- the background writer -------------------------------------------------------------------

    def start(self) -> None:
        self._tasks.start(self._run, name="sublane-upstream-watch")

    async def close(self) -> None:
        """Stop writing; what is still noted is written first."""
        await self._tasks.close()
        await self.flush()

    async def flush(self) -> None:
        """Write what was noted so far (a worker thread does the database work)."""
        if not self._pending:
            return
        batch, self._pending = self._pending, {}
        try:
            told = await anyio.to_thread.run_sync(self._write, batch)
        except SQLAlchemyError as exc:
            _log.error("could not store upstream changes: %s", type(exc).__name__)
            return
        if told:
            self._outbox.added()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            try:
                await self.flush()
            except Exception:  # a broken write must not end the watch for good
                _log.exception("storing upstream changes failed")

    def _write(self, batch: Mapping[tuple[str, str, str], _Seen]) -> bool:
        """Store a batch; the replica whose insert makes a row alerts, the one that claims the day
        logs. Whether an alert was written."""
        told = False
        with self._engine.begin() as connection:
            for (provider, kind, name), seen in batch.items():
                day = int(seen.last // DAY_S)
                if _inserted(connection, provider, kind, name, seen, day):
                    _log.warning(
                        "upstream %s answered something SubLane does not know: %s %r (request %s)",
                        provider, kind, name, seen.request_id,
                    )  # fmt: skip
                    data = {
                        "provider": provider, "kind": kind, "name": name,
                        "example_request_id": seen.request_id,
                    }  # fmt: skip
                    told = self._outbox.add(connection, EVENT, data) is not None or told
                    continue
                where = _row(provider, kind, name)
                connection.execute(
                    sa.update(UpstreamChange)
                    .where(where)
                    .values(
                        count=col(UpstreamChange.count) + seen.count,
                        last_seen=sa.func.max(col(UpstreamChange.last_seen), seen.last)
                        if connection.dialect.name == "sqlite"
                        else sa.func.greatest(col(UpstreamChange.last_seen), seen.last),
                        example_request_id=sa.func.coalesce(
                            col(UpstreamChange.example_request_id), seen.request_id
                        ),
                    )
                )
                claimed = connection.execute(
                    sa.update(UpstreamChange)
                    .where(where)
                    .where(
                        sa.or_(col(UpstreamChange.logged_day).is_(None), col(UpstreamChange.logged_day) < day)
                    )
                    .values(logged_day=day)
                    .returning(col(UpstreamChange.id))
                )
                if claimed.first() is not None:
                    _log.warning(
                        "upstream %s still answers what SubLane does not know: %s %r (request %s)",
                        provider, kind, name, seen.request_id,
                    )  # fmt: skip
        return told


def _row(provider: str, kind: str, name: str) -> Any:
    return sa.and_(
        col(UpstreamChange.provider) == provider,
        col(UpstreamChange.kind) == kind,
        col(UpstreamChange.name) == name,
    )


def _inserted(connection: Connection, provider: str, kind: str, name: str, seen: _Seen, day: int) -> bool:
    """Insert the name's row unless it exists; whether this insert made it (only one replica's does)."""
    values = {
        "provider": provider, "kind": kind, "name": name, "first_seen": seen.first, "last_seen": seen.last,
        "count": seen.count, "example_request_id": seen.request_id, "logged_day": day,
    }  # fmt: skip
    dialect: ModuleType = sqlite
    if connection.dialect.name == "postgresql":  # imported only there (issue #49: idle memory)
        from sqlalchemy.dialects import postgresql

        dialect = postgresql
    statement = dialect.insert(UpstreamChange).values(values).on_conflict_do_nothing()
    return connection.execute(statement.returning(col(UpstreamChange.id))).first() is not None


_COLUMNS = (
    col(UpstreamChange.provider), col(UpstreamChange.kind), col(UpstreamChange.name),
    col(UpstreamChange.first_seen), col(UpstreamChange.last_seen), col(UpstreamChange.count),
    col(UpstreamChange.example_request_id),
)  # fmt: skip


def upstream_changes(engine: Engine) -> list[dict[str, Any]]:
    """``GET /api/upstream-changes``'s items, the newest sighting first (blocking)."""
    query = sa.select(*_COLUMNS).order_by(col(UpstreamChange.last_seen).desc(), col(UpstreamChange.id))
    with engine.connect() as connection:
        rows = connection.execute(query).mappings().all()
    return [
        {
            "provider": row["provider"], "kind": row["kind"], "name": row["name"],
            "first_seen": row["first_seen"], "last_seen": row["last_seen"], "count": row["count"],
            "example_request_id": row["example_request_id"],
        }
        for row in rows
    ]  # fmt: skip
