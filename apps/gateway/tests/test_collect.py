"""Reading upstream streams on whole chunks (issue #19): collect_stream and the relay's observing.

The reader cuts events on the whole piece a read gives and looks only at the name line of the
events nobody wants; these tests hold it to the event-by-event reader it replaced, on every kind of
stream (LF, CRLF, CR, multi-line data, comments, unnamed events, odd names, broken JSON) cut at
every place, and check the timeout, cut-stream and cancel endings. The relay's pieces must be the
upstream's bytes unchanged, observed as the event-by-event observer did.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sublane_core import FakeClock, Outcome, WireProtocol
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._collect import collect_stream
from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._relay import observe_blocks, observe_events
from sublane_protocols import Collector, new_collector
from sublane_provider_codex import CodexStreamObserver
from sublane_providers import ResponseHeaders, SseFramer, StreamState, UpstreamCut, parse_event

_PRINCIPAL = Principal(1, "key", 1, "user", "member", 1, "group", None, 0, 0, None)


def _frame(name: str, payload: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n"


_RESPONSE = {
    "id": "resp_1",
    "status": "completed",
    "output": [],
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
_ITEM = {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "hi é"}]}
_EVENTS = [
    _frame("response.created", {"type": "response.created", "response": {"id": "resp_1"}}),
    _frame("response.in_progress", {"type": "response.in_progress", "response": {"id": "resp_1"}}),
    _frame("response.output_item.added", {"type": "response.output_item.added", "item": {"id": "msg_1"}}),
    _frame("response.output_text.delta", {"type": "response.output_text.delta", "delta": ""}),
    _frame("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hi"}),
    _frame("response.output_text.delta", {"type": "response.output_text.delta", "delta": " é\u2028"}),
    _frame("response.output_item.done", {"type": "response.output_item.done", "item": _ITEM}),
    _frame("response.completed", {"type": "response.completed", "response": _RESPONSE}),
    _frame("response.incomplete", {"type": "response.incomplete", "response": _RESPONSE}),
    _frame("error", {"type": "error", "code": "overloaded", "message": "busy"}),
    'data: {"type":"response.output_item.done","item":{"id":"unnamed"}}\n\n',  # no event line
    'id: 4\nevent: response.completed\ndata: {"type":"response.completed","response":{"id":"r"}}\n\n',
    'event:response.output_item.done\ndata:{"type":"response.output_item.done","item":1}\n\n',
    'event:  response.completed \ndata: {"type":"response.completed","response":{}}\n\n',  # padded
    'event: response.output_item.done\ndata: {"type":"response.output_item.done",\ndata: "item":2}\n\n',
    "event: response.completed\ndata: {not json\n\n",
    "event: response.output_item.done\ndata: [1,2]\n\n",
    "event: response.output_item.done\n\n",  # no data
    ": keep-alive\n\n",
    "event: response.output_text.done\ndata: {}\n\n",
    "\n\n",  # a lone blank line between events
]
_SEPARATORS = ["\n", "\r\n", "\r"]


class _Stream:
    """An upstream answer's body (an ``UpstreamResponse``) made of ``chunks``, then a cut
    (``fail``) or a silence (``stall``)."""

    def __init__(self, chunks: list[bytes], *, fail: bool = False, stall: bool = False) -> None:
        self._chunks, self._fail, self._stall = list(chunks), fail, stall
        self.closed = False
        self.status_code = 200
        self.headers = ResponseHeaders([])

    async def read(self, within: float | None = None) -> bytes | None:
        if self._chunks:
            return self._chunks.pop(0)
        if self._stall:
            await asyncio.sleep(30 if within is None else within)
            return None
        if self._fail:
            raise UpstreamCut("cut")
        return b""

    async def aclose(self) -> None:
        self.closed = True


def _call() -> ModelCall:
    """A started call (built directly: ``ModelCall.start`` would bind a request ID to the test's context)."""
    clock = FakeClock()
    return ModelCall(
        clock=clock, sender=None, request_id="req_1", principal=_PRINCIPAL, model="gpt-5",
        protocol="responses", operation="responses", started_wall=clock.time(), started=clock.monotonic(),
        upstream_status=200,
    )  # fmt: skip


def _response(stream: _Stream) -> _Stream:
    return stream


class _EveryEvent:
    """A collector that wants every event, like the translated (hub) ones."""

    def __init__(self) -> None:
        self.fed: list[Any] = []

    def wants(self, name: str | None) -> bool:
        return True

    def feed(self, payload: Mapping[str, Any]) -> None:
        self.fed.append(dict(payload))

    def result(self) -> dict[str, Any] | None:
        return {"fed": self.fed}


def _reference(
    chunks: list[bytes], observer: CodexStreamObserver, collector: Collector, unwrap: Any
) -> list[bool]:
    """The event-by-event reader collect_stream had before issue #19 (note_output calls kept)."""
    framer, notes = SseFramer(), []
    for chunk in chunks:
        for block in framer.feed(chunk):
            name = None
            if block.startswith(b"event:"):
                end = block.find(b"\n")
                name = block[6:end].strip().decode("utf-8", errors="replace") if end != -1 else None
            if name is not None and not observer.wants(name) and not collector.wants(name):
                observer.observe(name, None)
                continue
            event = parse_event(block)
            payload = observer.observe(event.name, event.data)
            if payload is None:
                if event.data is None or not collector.wants(event.name):
                    continue
                try:
                    payload = json.loads(event.data)
                except ValueError:
                    continue
                if not isinstance(payload, dict):
                    continue
                observer.observe_payload(payload)
            notes.append(observer.state.first_delta is not None)
            collector.feed(payload if unwrap is None else unwrap(payload))
    return notes


def _state(state: StreamState) -> tuple[Any, ...]:
    return (
        state.events, state.first_delta, state.usage, state.outcome, state.error_code,
        state.error_message, state.response_id,
    )  # fmt: skip


def _wrapped(payload: dict[str, Any]) -> dict[str, Any]:
    return {"unwrapped": payload}


_STREAMS = st.tuples(
    st.lists(st.sampled_from(range(len(_EVENTS))), max_size=14),
    st.sampled_from(_SEPARATORS),
    st.lists(st.integers(min_value=0, max_value=4000), max_size=6),
    st.sampled_from(["responses", "every", "every+unwrap"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_STREAMS)
def test_collecting_reads_what_the_event_by_event_reader_read(case: tuple[Any, ...]) -> None:
    picks, newline, cuts, kind = case
    text = "".join(_EVENTS[index] for index in picks).replace("\n", newline)
    body = text.encode()
    chunks = [body[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(body)], strict=True)]
    chunks = [chunk for chunk in chunks if chunk]

    def collector() -> Collector:
        return new_collector(WireProtocol.RESPONSES) if kind == "responses" else _EveryEvent()

    unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None = _wrapped if kind == "every+unwrap" else None
    expected_observer, expected_collector = CodexStreamObserver(), collector()
    notes = _reference(chunks, expected_observer, expected_collector, unwrap)

    call = _call()
    observer, got_collector = CodexStreamObserver(call.state), collector()
    answer = asyncio.run(
        collect_stream(call, _response(_Stream(chunks)), observer, got_collector, 30, unwrap=unwrap)
    )

    assert _state(call.state) == _state(expected_observer.state)
    assert (call.first_output_at is not None) == any(notes)
    finished = expected_observer.state.outcome in (Outcome.SUCCESS, Outcome.INCOMPLETE)
    assert answer == (expected_collector.result() if finished else None)
    assert got_collector.result() == expected_collector.result()
    assert call.finished


def _collect_codex(
    call: ModelCall, stream: _Stream, timeout_s: float
) -> Coroutine[Any, Any, dict[str, Any] | None]:
    """collect_stream of a Codex stream into a Responses answer."""
    return collect_stream(
        call,
        _response(stream),
        CodexStreamObserver(call.state),
        new_collector(WireProtocol.RESPONSES),
        timeout_s,
    )


def test_a_codex_stream_in_one_piece_gives_the_answer_and_counts_every_event() -> None:
    picks = [0, 1, 2, 3, 4, 5, 6, 7]
    body = "".join(_EVENTS[index] for index in picks).encode()
    call = _call()
    answer = asyncio.run(_collect_codex(call, _Stream([body]), 30))
    assert answer is not None and answer["output"] == [_ITEM] and answer["id"] == "resp_1"
    assert call.state.events == 8 and call.state.response_id == "resp_1"
    assert call.state.usage is not None and call.state.usage.output_tokens == 2
    assert call.first_output_at is not None


def test_mcool_1_a_stream_cut_before_its_end_is_an_upstream_stream_error() -> None:
    body = (_EVENTS[0] + _EVENTS[4] + _EVENTS[7][:40]).encode()
    call, stream = _call(), _Stream([body], fail=True)
    answer = asyncio.run(_collect_codex(call, stream, 30))
    assert answer is None and call.finished and stream.closed
    assert call.state.error_code == "upstream_stream_error" and call.state.events == 2


def test_adm_9_the_deadline_ends_a_silent_stream_with_request_timeout() -> None:
    call, stream = _call(), _Stream([_EVENTS[0].encode()], stall=True)
    answer = asyncio.run(_collect_codex(call, stream, 0.2))
    assert answer is None and stream.closed
    assert call.state.outcome is Outcome.ERROR and call.state.error_code == "request_timeout"


def test_a_caller_that_leaves_cancels_the_read_and_finishes_the_call_canceled() -> None:
    call, stream = _call(), _Stream([_EVENTS[0].encode()], stall=True)

    async def leave() -> None:
        task = asyncio.ensure_future(_collect_codex(call, stream, 30))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(leave())
    assert call.finished and stream.closed and call.state.events == 1


def _reference_observing(observer: CodexStreamObserver, blocks: list[bytes]) -> None:
    """observe_blocks as it was before issue #19."""
    for block in blocks:
        name = None
        if block.startswith(b"event:"):
            end = block.find(b"\n")
            name = block[6:end].strip().decode("utf-8", errors="replace") if end != -1 else None
        if name is not None and not observer.wants(name):
            observer.observe(name, None)
            continue
        event = parse_event(block)
        observer.observe(event.name, event.data)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.sampled_from(range(len(_EVENTS))), max_size=14),
    st.sampled_from(_SEPARATORS),
    st.lists(st.integers(min_value=0, max_value=4000), max_size=6),
)
def test_time_1_events_relayed_in_one_piece_are_the_upstream_bytes_and_observed_alike(
    picks: list[int], newline: str, cuts: list[int]
) -> None:
    body = "".join(_EVENTS[index] for index in picks).replace("\n", newline).encode()
    bounds = [0, *sorted(cuts), len(body)]
    chunks = [body[a:b] for a, b in itertools.pairwise(bounds)]
    by_list, by_piece = SseFramer(), SseFramer()
    expected, got, got_blocks = CodexStreamObserver(), CodexStreamObserver(), CodexStreamObserver()
    relayed: list[bytes] = []
    for chunk in chunks:
        blocks = by_list.feed(chunk)
        _reference_observing(expected, blocks)
        observe_blocks(got_blocks, blocks)
        piece = by_piece.cut(chunk)
        observe_events(got, piece)
        relayed.append(piece)
    assert b"".join(relayed) + by_piece.rest() == body
    assert _state(got.state) == _state(expected.state) == _state(got_blocks.state)
