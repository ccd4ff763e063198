"""Startup objects are frozen out of the collector's walks (issue #19): a full collection of a
built gateway then takes a fraction of what it did."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from sublane_gateway._app import asgi_app, create_app
from sublane_gateway._gc import (
    FULL_COLLECTION_THRESHOLD,
    YOUNG_COLLECTION_THRESHOLD,
    CollectorPausedInBursts,
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


@pytest.fixture
def collector_on() -> Iterator[None]:
    """These tests turn the process's collector off and on: it is on before and after each."""
    gc.enable()
    yield
    gc.enable()


async def test_the_collector_is_off_from_a_burst_until_no_call_queued_for_the_quiet_time(
    collector_on: None,
) -> None:
    pause = CollectorPausedInBursts(max_pause_s=20.0, quiet_s=0.5)
    pause.burst_began()
    assert not gc.isenabled() and pause.paused
    pause.burst_ended()
    await asyncio.sleep(0)
    assert not gc.isenabled()  # the queue emptied a moment: a burst's calls arrive over a while
    pause.burst_began()  # queued again within the quiet time: the same burst
    await asyncio.sleep(0.7)  # longer than the quiet time, with calls queued all along
    assert not gc.isenabled()
    pause.burst_ended()
    await asyncio.sleep(0.8)  # the quiet time's timer is due before this sleep ends
    assert gc.isenabled() and not pause.paused


async def test_a_burst_that_lasts_resumes_collecting_after_the_longest_pause(collector_on: None) -> None:
    pause = CollectorPausedInBursts(max_pause_s=0.05, quiet_s=0.05)
    pause.burst_began()
    await asyncio.sleep(0.1)
    assert gc.isenabled() and not pause.paused  # the gateway saturated: cycles are collected again
    pause.burst_ended()
    await asyncio.sleep(0.1)
    assert gc.isenabled()


async def test_a_collector_turned_off_by_something_else_stays_off(collector_on: None) -> None:
    gc.disable()
    pause = CollectorPausedInBursts(max_pause_s=0.05, quiet_s=0.01)
    pause.burst_began()
    pause.burst_ended()
    await asyncio.sleep(0.1)
    assert not gc.isenabled() and not pause.paused


async def test_a_served_burst_of_streams_collects_nothing_until_its_calls_have_begun(
    tmp_path: Path, collector_on: None
) -> None:
    """Through the real pacer of a real app: from the first call that queues to the last one's
    start, the streams' objects pile up past the young generation's threshold several times over
    and nothing is collected; once no call has queued for the quiet time, collecting resumes."""
    settings = make_settings(tmp_path, model_starts_per_turn=2)
    migrate(settings)
    pause = CollectorPausedInBursts(max_pause_s=20.0, quiet_s=0.5)  # a loaded machine's turns are slow
    pacer = asgi_app(create_app(settings), pause).pacer
    assert pacer is not None and pacer.burst is pause
    gc.collect()
    threshold = gc.get_threshold()[0]
    collections: list[int] = []
    streams: list[list[list[int]]] = []  # what the started streams hold while they run

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and pacer.waiting:
            collections.append(info["generation"])

    async def call() -> None:
        if not pacer.take():
            await pacer.wait()
        streams.append([[index] for index in range(threshold)])

    gc.callbacks.append(counted)
    try:
        await asyncio.gather(*(call() for _ in range(40)))
        assert pause.paused and not gc.isenabled()
        assert collections == []
        assert gc.get_count()[0] > 10 * threshold  # a collection was due many times over
        await asyncio.sleep(1.0)
        assert gc.isenabled() and not pause.paused
    finally:
        gc.callbacks.remove(counted)


def test_test_apps_leave_the_collector_alone(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    migrate(settings)
    pacer = asgi_app(create_app(settings)).pacer
    assert pacer is not None and pacer.burst is None


def test_a_pause_begun_on_a_loop_that_ended_is_bounded_on_the_next(collector_on: None) -> None:
    """A test's loop may end in a burst: its timers never fire, the next loop's bound the pause."""
    pause = CollectorPausedInBursts(max_pause_s=0.2, quiet_s=5.0)

    async def begin() -> None:
        pause.burst_began()

    async def end_and_wait() -> None:
        pause.burst_ended()
        await asyncio.sleep(0.5)

    asyncio.run(begin())
    assert not gc.isenabled()
    asyncio.run(end_and_wait())
    assert gc.isenabled() and not pause.paused
