"""A JSON answer read from an upstream stream, for callers that did not ask for a stream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from sublane_core import Outcome
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._relay import event_name, finish_call, json_object
from sublane_protocols import Collector
from sublane_providers import SseFramer, StreamObserver, parse_event


async def collect_stream(
    call: ModelCall,
    response: httpx.Response,
    observer: StreamObserver,
    collector: Collector,
    timeout_s: float,
    *,
    unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Read the whole stream into ``collector``; its answer, or ``None`` when the stream failed.

    Finishes the call. ``unwrap`` takes an upstream's envelope off each event first.
    """
    framer = SseFramer()
    deadline = call.started + timeout_s
    try:
        async with asyncio.timeout(max(0.0, deadline - call.clock.monotonic())):
            async for chunk in response.aiter_raw():
                for block in framer.feed(chunk):
                    name = event_name(block)
                    if name is not None and not observer.wants(name) and not collector.wants(name):
                        observer.observe(name, None)  # counted; nobody needs it decoded (issue #19)
                        continue
                    event = parse_event(block)
                    payload = observer.observe(event.name, event.data)  # decoded if it wants it
                    if payload is None:
                        if event.data is None or not collector.wants(event.name):
                            continue  # a delta the answer does not need: not decoded (issue #19)
                        payload = json_object(event.data)
                        if payload is None:
                            continue
                        observer.observe_payload(payload)
                    call.note_output()
                    collector.feed(payload if unwrap is None else unwrap(payload))
    except httpx.HTTPError:
        call.state.error_code = "upstream_stream_error"
    except TimeoutError:
        call.state.outcome, call.state.error_code = Outcome.ERROR, "request_timeout"
    except BaseException:
        await response.aclose()
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    await response.aclose()
    state = call.state
    finish_call(call)
    if state.outcome in (Outcome.SUCCESS, Outcome.INCOMPLETE):
        return collector.result()
    return None
