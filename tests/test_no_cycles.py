"""A served model call leaves no reference cycles behind (issue #19).

``sublane serve`` makes full collections ten times rarer on the strength of this
(``sublane_gateway._gc``): what a call allocates is freed by reference counting, never by the
collector, so nothing of ours waits for a full collection to be freed. Checked with
``gc.DEBUG_SAVEALL`` over real calls (JSON, stream, translated, an upstream error, a bad key).
"""

from __future__ import annotations

import gc
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gateway_pool import Pool

from sublane_sim import Behaviour

OURS = ("sublane_", "/packages/sublane-", "/apps/gateway/")


def _ours(thing: Any) -> str | None:
    """What names ``thing`` as one of SubLane's objects (its class, or its code's file), else None."""
    if isinstance(thing, types.FrameType):
        where = thing.f_code.co_filename
    elif isinstance(thing, types.CoroutineType | types.GeneratorType | types.AsyncGeneratorType):
        code = getattr(thing, "cr_code", None) or getattr(thing, "gi_code", None) or thing.ag_code
        where = code.co_filename
    elif isinstance(thing, types.FunctionType):
        where = thing.__code__.co_filename
    else:
        where = type(thing).__module__ or ""
    return f"{type(thing).__name__} of {where}" if any(part in where for part in OURS) else None


@contextmanager
def garbage_cycles() -> Iterator[list[str]]:
    """The objects of ours that only the collector could free, made inside the block."""
    found: list[str] = []
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
    finally:
        gc.collect()
        gc.set_debug(0)
        found += [name for name in map(_ours, gc.garbage) if name is not None]
        gc.garbage.clear()


def _calls(pool: Pool) -> list[Callable[[], Any]]:
    client = pool.client()
    stranger = pool.client("sk-sublane-not-a-key")
    body = {"model": "gpt-5-codex", "input": "say hi"}
    messages = {"model": "gpt-5-codex", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    return [
        lambda: client.post("/v1/responses", json=body),
        lambda: client.post("/v1/responses", json=body | {"stream": True}),
        lambda: client.post("/v1/messages", json=messages),  # translated to the Codex upstream
        lambda: stranger.post("/v1/responses", json=body),
    ]


def test_a_served_call_leaves_no_reference_cycles(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    calls = _calls(pool)
    for call in calls:  # first calls compile, import and cache what later ones reuse
        call()
    with garbage_cycles() as found:
        for _ in range(5):
            for call in calls:
                assert call().status_code in (200, 401)
    assert found == []


def test_a_failed_upstream_call_leaves_no_reference_cycles(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    pool.sim.set_default(pool.sim_accounts[0].id, Behaviour.error(500))
    client = pool.client()
    body = {"model": "gpt-5-codex", "input": "say hi"}
    client.post("/v1/responses", json=body)
    with garbage_cycles() as found:
        for _ in range(3):
            assert client.post("/v1/responses", json=body).status_code >= 400  # failed, then cooling
    assert found == []
