"""Startup objects are frozen out of the collector's walks (issue #19): a full collection of a
built gateway then takes a fraction of what it did."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from sublane_gateway._app import asgi_app, create_app
from sublane_gateway._gc import freeze_startup_objects
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
