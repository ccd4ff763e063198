"""Relaying an upstream SSE stream to the client, event by event, with heartbeats (TIME-1, TIME-2).

Upstream bytes go out unchanged, cut at event boundaries so that a ``: keep-alive`` comment can go
between events while the upstream is quiet. Only the events that scheduling and records need are
decoded. When the client goes away mid-stream, the upstream is read for at most
``POST_CANCEL_DRAIN_S`` more to collect final usage (ADM-8), then closed, and the slot released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any, Protocol

from sublane_core import Outcome, WireProtocol, json_dumps, json_loads
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._reply import SSE_HEADERS, JsonReply, StreamReply, error_reply
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_gateway.pipeline._upstream_watch import UNWATCHED, ProviderWatch
from sublane_protocols import StreamTranslator
from sublane_providers import (
    KIND_EVENT,
    USUAL_EVENT,
    SseFramer,
    StreamState,
    UpstreamError,
    UpstreamResponse,
    blocks_of,
    event_fields,
    parse_event,
)

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_SUCCESS, _ERROR, _CANCELED = Outcome.SUCCESS, Outcome.ERROR, Outcome.CANCELED

_log = logging.getLogger("sublane.relay")

KEEPALIVE = b": keep-alive\n\n"
#: A quiet JSON-array stream (Gemini without ``alt=sse``) is kept alive with what JSON allows
#: between tokens: whitespace (RFC 8259 §2), never an SSE comment (GEM-2, TIME-1).
JSON_KEEPALIVE = b"\n"
POST_CANCEL_DRAIN_S = 3.0
_background: set[asyncio.Task[None]] = set()


class EventObserver(Protocol):
    """What a relay asks of a provider's stream observer (a :class:`~sublane_providers.StreamObserver`)."""

    state: StreamState

    def wants(self, name: str | None) -> bool: ...

    def observe(self, name: str | None, data: str | None) -> object: ...

    def observe_data(self, name: str | None, data: bytes | None) -> dict[str, Any] | None: ...


def event_name(block: bytes) -> str | None:
    """The ``event:`` name of a block when it comes first (it does for Codex and Claude)."""
    if block.startswith(b"event:"):
        end = block.find(b"\n")
        return block[6:end].strip().decode("utf-8", errors="replace") if end != -1 else None
    return None


def observe_blocks(
    observer: EventObserver,
    blocks: list[bytes],
    watch: ProviderWatch = UNWATCHED,
    request_id: str | None = None,
) -> dict[str, Any] | None:
    """Feed complete event blocks to the observer, decoding only what it wants; the last payload
    it decoded. An event name ``watch`` does not know is noted (CLIENT-7)."""
    known = watch.events
    last = None
    for block in blocks:
        name = event_name(block)
        if name is not None:
            if name not in known:
                watch.note(KIND_EVENT, name, request_id)
            if not observer.wants(name):
                observer.state.events += 1  # only counted (StreamObserver.observe)
                continue
        decoded = observer.observe_data(*event_fields(block))
        if decoded is not None:
            last = decoded
    return last


def observe_events(
    observer: EventObserver, events: bytes, watch: ProviderWatch = UNWATCHED, request_id: str | None = None
) -> dict[str, Any] | None:
    """:func:`observe_blocks` for complete events in one piece (:meth:`SseFramer.cut`): an event
    the observer does not want is counted from its name line, without a copy (issue #19); the name
    is read from what the provider knows (``watch.event_names``: one lookup, which notes a name
    the provider does not know, CLIENT-7)."""
    if events.find(b"\r") != -1:
        return observe_blocks(observer, blocks_of(events), watch, request_id)
    state, wants, known, names = observer.state, observer.wants, watch.events, watch.event_names
    usual_at = USUAL_EVENT.match
    start, size = 0, len(events)
    last = None
    while start < size:
        usual = usual_at(events, start)
        if usual is not None:
            name = names[usual[1]]  # decoded once per name; an unknown one is noted (CLIENT-7)
            if wants(name):
                last = observer.observe_data(name, usual[2]) or last
            else:
                state.events += 1
            start = usual.end()
            continue
        stop = events.find(b"\n\n", start) + 2
        if events.startswith(b"event:", start):
            name = events[start + 6 : events.find(b"\n", start)].strip().decode("utf-8", "replace")
            if name not in known:
                watch.note(KIND_EVENT, name, request_id)
            if not wants(name):
                state.events += 1
                start = stop
                continue
        last = observer.observe_data(*event_fields(events[start:stop])) or last
        start = stop
    return last


def watch_ending(watch: ProviderWatch, call: ModelCall, terminal: dict[str, Any] | None) -> None:
    """At a stream's terminal event: its fields and, for an error, its code (CLIENT-7)."""
    if terminal is not None:
        watch.terminal(terminal, call.request_id)
    if call.state.outcome is _ERROR:
        watch.error(call.state.error_code, call.request_id)


async def relay_sse(
    call: ModelCall,
    response: UpstreamResponse,
    observer: EventObserver,
    *,
    heartbeat_s: float,
    idle_timeout_s: float,
    on_end: Callable[[ModelCall], None],
    transform: Callable[[list[bytes]], bytes] | None = None,
    trailer: Callable[[], bytes] | None = None,
    deadline: float | None = None,
    keepalive: bytes = KEEPALIVE,
    watch: ProviderWatch = UNWATCHED,
) -> AsyncIterator[bytes]:
    """Yield the upstream's events as they complete; ``on_end`` finishes the call exactly once.

    ``transform`` turns complete upstream events into what the client gets (another protocol);
    without it the bytes pass unchanged. ``trailer`` adds a last frame after a normal end.
    ``deadline`` (monotonic) ends the stream with ``request_timeout`` (ADM-9). ``keepalive`` is
    written after ``heartbeat_s`` of upstream silence. ``watch``: what the provider's upstream is
    known to send; anything else is noted (CLIENT-7), the bytes relayed all the same.
    """
    framer = SseFramer()
    request_id = call.request_id
    clock = call.clock
    last_event = clock.monotonic()
    ended = False
    try:
        while True:
            wait = heartbeat_s
            if idle_timeout_s:
                wait = max(0.0, min(wait, last_event + idle_timeout_s - clock.monotonic()))
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - clock.monotonic()))
            try:
                chunk = await response.read(wait)
            except UpstreamError as exc:
                call.state.error_code = "upstream_stream_error"
                _log.info("upstream stream of %s broke: %s", call.request_id, type(exc).__name__)
                break
            if chunk is None:
                if deadline is not None and clock.monotonic() >= deadline:
                    call.state.outcome = _ERROR
                    call.state.error_code = "request_timeout"
                    break
                if idle_timeout_s and clock.monotonic() - last_event >= idle_timeout_s:
                    call.state.outcome = _ERROR
                    call.state.error_code = "stream_idle_timeout"
                    break
                yield keepalive
                continue
            if not chunk:
                break
            if transform is not None:
                blocks = framer.feed(chunk)
                if blocks:
                    decoded = observe_blocks(observer, blocks, watch, request_id)
                    last_event = clock.monotonic()
                    out = transform(blocks)
                    if out:
                        call.note_output()  # XLAT-5: first output as the client sees it
                    if call.state.finished:
                        watch_ending(watch, call, decoded)
                        on_end(call)
                    if out:
                        yield out
            else:
                events = framer.cut(chunk)  # the complete events, bytes unchanged, in one piece
                if events:
                    decoded = observe_events(observer, events, watch, request_id)
                    last_event = clock.monotonic()
                    call.note_output()
                    if call.state.finished:
                        # The terminal event: record the call and free its slot before the client
                        # can see the end and move on (WAIT-7); clients often close at once after it.
                        watch_ending(watch, call, decoded)
                        on_end(call)
                    yield events
        ended = True
        if trailer is not None:
            tail = trailer()
            if tail:
                yield tail
    finally:
        if call.finished:  # ended at its terminal event; only the connection is left to close
            _in_background(response.aclose())  # may run in a cancelled scope: never await here
        elif ended:
            await response.aclose()
            on_end(call)
        else:
            # The client left (cancellation or generator close): finish in the background, where
            # no cancel scope of the dead request can interrupt the drain.
            _in_background(_drain_after_cancel(call, response, framer, observer, on_end))


def _in_background(work: Coroutine[Any, Any, None]) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _background.add(task)
    task.add_done_callback(_background.discard)


async def _drain_after_cancel(
    call: ModelCall,
    response: UpstreamResponse,
    framer: SseFramer,
    observer: EventObserver,
    on_end: Callable[[ModelCall], None],
) -> None:
    try:
        async with asyncio.timeout(POST_CANCEL_DRAIN_S):
            while not call.state.finished:
                chunk = await response.read()
                if not chunk:
                    break
                observe_events(observer, framer.cut(chunk))
    except (TimeoutError, UpstreamError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            await response.aclose()
        call.state.outcome = _CANCELED
        call.state.error_code = "client_canceled"
        on_end(call)


def finish_call(call: ModelCall) -> None:
    """Finish a call from what its stream showed: terminal outcome, or an error when none came."""
    state = call.state
    outcome = state.outcome or _ERROR
    error_code = state.error_code if outcome in (_ERROR, _CANCELED) else None
    if state.outcome is None and error_code is None:
        error_code = "stream_incomplete"  # ended without a terminal event (MCOOL-1)
    call.finish(outcome, error_code)


def json_object(data: str) -> dict[str, Any] | None:
    """The JSON object an event's data holds; ``None`` for anything else."""
    try:
        payload = json_loads(data)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def decoded(blocks: list[bytes]) -> list[dict[str, Any]]:
    """The JSON objects carried by complete SSE event blocks (others skipped)."""
    payloads = []
    for block in blocks:
        event = parse_event(block)
        if event.data is None:
            continue
        payload = json_object(event.data)
        if payload is not None:
            payloads.append(payload)
    return payloads


class Unwrapped:
    """A stream translator fed an upstream's events with their envelope taken off first."""

    __slots__ = ("_frames", "_unwrap")

    def __init__(self, unwrap: Callable[[dict[str, Any]], dict[str, Any]], frames: StreamTranslator) -> None:
        self._unwrap = unwrap
        self._frames = frames

    @property
    def finished(self) -> bool:
        return self._frames.finished

    def feed(self, payload: Mapping[str, Any]) -> bytes:
        return self._frames.feed(self._unwrap(dict(payload)))

    def trailer(self, error_code: str | None) -> bytes:
        return self._frames.trailer(error_code)


def stream_reply(
    runtime: ClientRuntime,
    call: ModelCall,
    response: UpstreamResponse,
    observer: EventObserver,
    frames: StreamTranslator | None = None,
    *,
    cut_ending: Callable[[str, str | None], bytes] | None = None,
    keepalive: bytes = KEEPALIVE,
) -> StreamReply:
    """Relay the upstream stream to the client — untouched, or through ``frames`` (another protocol).

    ``cut_ending(error_code, response_id)``: untouched, the frame that ends a stream the upstream
    broke off before its terminal event (the protocol's error ending).
    """
    settings = runtime.settings
    transform = trailer = None
    if frames is None and cut_ending is not None:
        ending = cut_ending

        def trailer() -> bytes:
            state = call.state
            if state.finished:
                return b""
            return ending(state.error_code or "upstream_stream_error", state.response_id)

    elif frames is not None:
        translator = frames

        def transform(blocks: list[bytes]) -> bytes:
            return b"".join(translator.feed(payload) for payload in decoded(blocks))

        def trailer() -> bytes:
            state = call.state
            return translator.trailer(None if state.finished else state.error_code or "upstream_stream_error")

    stream = relay_sse(
        call,
        response,
        observer,
        heartbeat_s=settings.sse_heartbeat_s,
        idle_timeout_s=settings.stream_idle_timeout_s,
        on_end=finish_call,
        transform=transform,
        trailer=trailer,
        deadline=call.started + settings.request_timeout_s,
        keepalive=keepalive,
        watch=runtime.watch_of(call.provider),
    )
    headers = {"x-request-id": call.request_id, "server-timing": call.server_timing()}
    return StreamReply(stream, headers | SSE_HEADERS)


async def relay_json(
    call: ModelCall,
    response: UpstreamResponse,
    protocol: WireProtocol,
    observe: Callable[[dict[str, Any]], None] | None,
    headers: Mapping[str, str],
    unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    *,
    deadline: float | None = None,
    idle_timeout_s: float = 0,
    watch: ProviderWatch = UNWATCHED,
) -> JsonReply:
    """Relay an upstream JSON answer as it came (the payload inside it, when the upstream wraps
    its answers: ``unwrap``) and finish the call from what ``observe`` saw.

    ``deadline`` (monotonic, ADM-9) and ``idle_timeout_s`` (TIME-2) bound the read (OPS-4).
    ``watch``: the top-level fields of an answer decoded anyway, checked against what the
    provider's upstream is known to answer (CLIENT-7).
    """
    try:
        content = await _read_bounded(call, response, deadline, idle_timeout_s)
    except TimeoutError as timeout:
        await response.aclose()
        code = str(timeout) or "request_timeout"
        call.finish(_ERROR, code)
        if code == "stream_idle_timeout":
            return error_reply(
                protocol, 504, "upstream_timeout", "The provider sent nothing for too long.",
                request_id=call.request_id,
            )  # fmt: skip
        return error_reply(
            protocol, 504, "request_timeout", "The request ran past its deadline.", request_id=call.request_id
        )
    except UpstreamError:
        await response.aclose()
        call.finish(_ERROR, "upstream_stream_error")
        return error_reply(
            protocol,
            502,
            "upstream_stream_error",
            "The provider's answer broke off.",
            request_id=call.request_id,
        )
    except BaseException:
        await response.aclose()
        call.finish(_CANCELED, "client_canceled")
        raise
    await response.aclose()
    if observe is not None or unwrap is not None:
        try:
            payload = json_loads(content)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            if observe is not None:
                observe(payload)
                if response.status_code < 300:
                    watch.answer(payload, call.request_id)
            if unwrap is not None and response.status_code < 300:
                content = json_dumps(unwrap(payload))
    outcome = call.state.outcome if call.state.outcome is not None else _SUCCESS
    call.finish(outcome, call.state.error_code if outcome is _ERROR else None)
    return JsonReply(response.status_code, content, dict(headers))


async def _read_bounded(
    call: ModelCall, response: UpstreamResponse, deadline: float | None, idle_timeout_s: float
) -> bytes:
    """The whole body; ``TimeoutError("request_timeout"|"stream_idle_timeout")`` past a limit."""
    clock = call.clock
    chunks: list[bytes] = []
    while True:
        wait: float | None = None
        reason = "request_timeout"
        if deadline is not None:
            wait = max(0.0, deadline - clock.monotonic())
        if idle_timeout_s and (wait is None or idle_timeout_s < wait):
            wait, reason = idle_timeout_s, "stream_idle_timeout"
        chunk = await response.read(wait)
        if chunk is None:
            raise TimeoutError(reason)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
