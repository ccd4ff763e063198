"""Startup objects are frozen out of the collector's walks (issue #19): a full collection of a
built gateway then takes a fraction of what it did."""

from __future__ import annotations

import gc
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from sublane_gateway._app import asgi_app, create_app
from sublane_gateway._gc import (
    FULL_COLLECTION_THRESHOLD,
    YOUNG_COLLECTION_THRESHOLD,
    freeze_startup_objects,
    rarer_collections,
)
from sublane_gateway.testing import make_settings, migrate


def _full_collection_s() -> float:
    started = time.perf_counter()
    gc.collect()
    return time.perf_counter() - started


def test_a_full_collection_skips_what_was_frozen_at_startup(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    migrate(settings)
    app = asgi_app(create_app(settings))
    assert app is not None
    before = min(_full_collection_s() for _ in range(3))
    try:
        assert freeze_startup_objects() > 10_000
        after = min(_full_collection_s() for _ in range(3))
    finally:
        gc.unfreeze()
    assert after < before / 4


async def test_what_the_lifespan_startup_built_is_frozen_once_it_completed(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    migrate(settings)
    app = asgi_app(create_app(settings, when_started=freeze_startup_objects))
    inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []
    frozen_at: list[int] = []

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["type"])
        frozen_at.append(gc.get_freeze_count())

    gc.unfreeze()
    try:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
        assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
        assert frozen_at[0] > 10_000  # frozen by the time startup was reported complete
    finally:
        gc.unfreeze()


def test_young_and_full_collections_are_made_rarer_the_middle_ones_kept() -> None:
    before = gc.get_threshold()
    try:
        assert rarer_collections() == (YOUNG_COLLECTION_THRESHOLD, before[1], FULL_COLLECTION_THRESHOLD)
        assert FULL_COLLECTION_THRESHOLD >= 10 * 10  # ten times Python's default of 10
        assert YOUNG_COLLECTION_THRESHOLD >= 5 * 700  # several times Python's default of 700
    finally:
        gc.set_threshold(*before)
