"""Playing a provider's event list onto the wire with the scripted pacing and faults."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ._script import Behaviour

__all__ = ["Event", "EventSink", "Outcome", "play", "wait_for_disconnect"]

Outcome = str  # "completed" | "incomplete" | "error" | "cut" | "canceled"

# Upper bound for an open-ended stall, so a forgotten test cannot hold a socket forever.
MAX_STALL_S = 600.0


@dataclass(frozen=True, slots=True)
class Event:
    """One upstream event. `delta` events are paced and counted for fault positions; the first
    `terminal` event marks where an unfinished fault (cut/stall/overload) must happen at the latest.
    """

    data: dict[str, Any]
    name: str | None = None
    delta: bool = False
    terminal: bool = False


class EventSink(Protocol):
    async def send(self, events: Sequence[Event]) -> None:
        """Write a batch of events (one write for HTTP, one frame each for WebSocket)."""
        ...


async def play(
    events: Sequence[Event],
    behaviour: Behaviour,
    sink: EventSink,
    failure: Callable[[], list[Event]],
    success: Outcome = "completed",
    settle: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Send `events` through `sink` honouring the behaviour; returns how the stream ended.

    Events between two pauses are batched into one write. For `cut` the caller closes the
    connection after this returns `"cut"`; for `overload` the provider's `failure()` events replace
    the rest of the stream. `settle(outcome)` runs just before the last write of a finished stream,
    so whoever reads the terminal event already sees the request settled in the counters.
    """
    faulty = behaviour.kind in ("cut", "stall", "overload")
    fault_at = behaviour.after_deltas if faulty else -1
    pending: list[Event] = []
    deltas_sent = 0

    async def flush() -> None:
        if pending:
            await sink.send(list(pending))
            pending.clear()

    async def fault() -> Outcome | None:
        await flush()
        if behaviour.kind == "stall":
            await asyncio.sleep(MAX_STALL_S if behaviour.stall_ms is None else behaviour.stall_ms / 1000)
            if behaviour.stall_ms is None:
                return "cut"
            return None
        if behaviour.kind == "overload":
            if settle is not None:
                settle("error")
            await sink.send(failure())
            return "error"
        return "cut"

    for event in _changed(events, behaviour):
        at_fault = deltas_sent == fault_at or (event.terminal and fault_at >= deltas_sent)
        if (event.delta or event.terminal) and at_fault:
            fault_at = -1
            ended = await fault()
            if ended is not None:
                return ended
        if event.delta:
            delay = behaviour.first_delta_delay_ms if deltas_sent == 0 else behaviour.pacing_ms
            if delay > 0:
                await flush()
                await asyncio.sleep(delay / 1000)
            deltas_sent += 1
        pending.append(event)
    if settle is not None:
        settle(success)
    await flush()
    return success


def _changed(events: Sequence[Event], behaviour: Behaviour) -> Sequence[Event]:
    """The events with what a newer upstream would add (CLIENT-7): an event of a type the client
    may not know, before the first terminal event, and a new top-level field on that event."""
    if behaviour.extra_event is None and behaviour.extra_field is None:
        return events
    changed: list[Event] = []
    added = False
    for event in events:
        if event.terminal and not added:
            added = True
            if behaviour.extra_event is not None:
                name = behaviour.extra_event if event.name is not None else None
                changed.append(Event({"type": behaviour.extra_event}, name=name))
            if behaviour.extra_field is not None:
                event = Event({**event.data, behaviour.extra_field: True}, event.name, event.delta, True)
        changed.append(event)
    return changed


async def wait_for_disconnect(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> None:
    """Return once the ASGI server reports that the client went away."""
    while True:
        message = await receive()
        if message["type"] in ("http.disconnect", "websocket.disconnect"):
            return
