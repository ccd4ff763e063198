"""A JSON answer read from an upstream stream, for callers that did not ask for a stream.

The body is read in the pieces the connection gives and cut into events on the whole piece
(issue #19): an event neither the observer nor the collector wants is only counted, found by its
name line without a copy of the event; the others are decoded straight from their bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sublane_core import Outcome, json_loads_text
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._relay import finish_call, watch_ending
from sublane_gateway.pipeline._upstream_watch import UNWATCHED, ProviderWatch
from sublane_protocols import Collector
from sublane_providers import (
    KIND_EVENT,
    USUAL_EVENT,
    SseFramer,
    StreamObserver,
    UpstreamError,
    UpstreamResponse,
    blocks_of,
    event_fields,
)

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_SUCCESS, _INCOMPLETE = Outcome.SUCCESS, Outcome.INCOMPLETE
_ERROR, _CANCELED = Outcome.ERROR, Outcome.CANCELED


async def collect_stream(
    call: ModelCall,
    response: UpstreamResponse,
    observer: StreamObserver,
    collector: Collector,
    timeout_s: float,
    *,
    unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    watch: ProviderWatch = UNWATCHED,
) -> dict[str, Any] | None:
    """Read the whole stream into ``collector``; its answer, or ``None`` when the stream failed.

    Finishes the call. ``unwrap`` takes an upstream's envelope off each event first. ``watch``:
    event names and error codes the provider's upstream is not known to send are noted (CLIENT-7).
    """
    framer = SseFramer()
    clock, deadline = call.clock, call.started + timeout_s
    last = None  # the last event decoded: at the end of a finished stream, its terminal event
    try:
        while chunk := await response.read(max(0.0, deadline - clock.monotonic())):
            events = framer.cut(chunk)
            if events:
                last = _take(events, call, observer, collector, unwrap, watch) or last
        if call.state.finished:  # the upstream's own ending (CLIENT-7)
            watch_ending(watch, call, last)
        if chunk is None:  # nothing came before the deadline (one timer only while waiting)
            call.state.outcome, call.state.error_code = _ERROR, "request_timeout"
    except UpstreamError:
        call.state.error_code = "upstream_stream_error"
    except TimeoutError:
        call.state.outcome, call.state.error_code = _ERROR, "request_timeout"
    except BaseException:
        await response.aclose()
        call.finish(_CANCELED, "client_canceled")
        raise
    await response.aclose()
    state = call.state
    finish_call(call)
    if state.outcome in (_SUCCESS, _INCOMPLETE):
        return collector.result()
    return None


def _take(
    events: bytes,
    call: ModelCall,
    observer: StreamObserver,
    collector: Collector,
    unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None,
    watch: ProviderWatch,
) -> dict[str, Any] | None:
    """Feed complete events (one piece, as :meth:`SseFramer.cut` gives them); the last decoded."""
    known = watch.events
    last = None
    if events.find(b"\r") != -1:  # lines may end in CR or CRLF: event by event
        for block in blocks_of(events):
            name, data = event_fields(block)
            if name is not None and name not in known:
                watch.note(KIND_EVENT, name, call.request_id)
            last = _feed(name, data, call, observer, collector, unwrap) or last
        return last
    state, names = observer.state, watch.event_names
    observer_wants, collector_wants = observer.wants, collector.wants
    usual_at = USUAL_EVENT.match
    start, size = 0, len(events)
    while start < size:
        usual = usual_at(events, start)
        if usual is not None:  # "event: NAME\ndata: DATA\n\n": event_fields without a copy of the block
            name = names[usual[1]]  # decoded once per name; an unknown one is noted (CLIENT-7)
            if observer_wants(name) or collector_wants(name):
                last = _feed(name, usual[2], call, observer, collector, unwrap) or last
            else:
                state.events += 1  # counted; nobody needs it decoded
            start = usual.end()
            continue
        stop = events.find(b"\n\n", start) + 2
        if events.startswith(b"event:", start):
            name = events[start + 6 : events.find(b"\n", start)].strip().decode("utf-8", "replace")
            if name not in known:
                watch.note(KIND_EVENT, name, call.request_id)
            if not observer_wants(name) and not collector_wants(name):
                state.events += 1
                start = stop
                continue
        last = _feed(*event_fields(events[start:stop]), call, observer, collector, unwrap) or last
        start = stop
    return last


def _feed(
    name: str | None,
    data: bytes | None,
    call: ModelCall,
    observer: StreamObserver,
    collector: Collector,
    unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None,
) -> dict[str, Any] | None:
    payload = observer.observe_data(name, data)  # decoded if it wants it
    if payload is None:
        if data is None or not collector.wants(name):
            return None  # a delta the answer does not need: not decoded
        payload = _object(data)
        if payload is None:
            return None
        observer.observe_payload(payload)
    if call.first_output_at is None:  # until the first output is noted (most events come after it)
        call.note_output()
    collector.feed(payload if unwrap is None else unwrap(payload))
    return payload


def _object(data: bytes) -> dict[str, Any] | None:
    try:
        payload = json_loads_text(data)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None
