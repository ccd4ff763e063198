"""ASGI responses that play a turn: SSE streams, paced JSON bodies and delayed errors.

Each one watches for the client going away while it works, so a cancellation is counted even
during a stall or a header delay, and releases its `Turn` exactly once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ._stream import MAX_STALL_S, Event, Outcome, play, wait_for_disconnect
from ._turns import Turn

__all__ = ["DelayedResponse", "EventStreamResponse", "PacedJSONResponse", "dumps"]


def dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _header_list(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


async def _race(work: asyncio.Future[Outcome], receive: Receive) -> Outcome:
    """Run `work` until it ends or the client disconnects (then it is cancelled)."""
    watcher: asyncio.Future[None] = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        waiters: list[asyncio.Future[Any]] = [work, watcher]
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if work in done:
        return work.result()
    work.cancel()
    await asyncio.gather(work, return_exceptions=True)
    return "canceled"


class _HttpSink:
    def __init__(self, send: Send, encode: Callable[[Event], bytes]) -> None:
        self._send = send
        self._encode = encode
        self.events = 0

    async def send(self, events: Sequence[Event]) -> None:
        self.events += len(events)
        body = b"".join(self._encode(event) for event in events)
        await self._send({"type": "http.response.body", "body": body, "more_body": True})


class EventStreamResponse(Response):
    """A 200 `text/event-stream` response playing the turn's events.

    A `cut` in `abort` mode returns from the ASGI app without finishing the body, which makes the
    server drop the connection (an incomplete chunked body on the client side); `eof` ends the body
    cleanly but without a terminal event.
    """

    def __init__(
        self,
        turn: Turn,
        events: Sequence[Event],
        encode: Callable[[Event], bytes],
        failure: Callable[[], list[Event]],
        headers: dict[str, str],
        success: Outcome = "completed",
    ) -> None:
        super().__init__(status_code=200)
        self._turn = turn
        self._events = events
        self._encode = encode
        self._failure = failure
        self._stream_headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
        }
        self._stream_headers.update(headers)
        self._success = success

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        sink = _HttpSink(send, self._encode)
        behaviour = self._turn.behaviour

        async def run() -> Outcome:
            if behaviour.header_delay_ms > 0:
                await asyncio.sleep(behaviour.header_delay_ms / 1000)
            await send(
                {"type": "http.response.start", "status": 200, "headers": _header_list(self._stream_headers)}
            )
            return await play(self._events, behaviour, sink, self._failure, self._success, settle)

        def settle(outcome: Outcome) -> None:
            self._turn.finish(outcome, 200)

        outcome = await _race(asyncio.ensure_future(run()), receive)
        self._turn.record.events = sink.events
        self._turn.finish(outcome, 200)
        if outcome == "cut" and behaviour.cut_mode == "abort":
            return  # incomplete body: the server closes the connection
        if outcome != "canceled":
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class PacedJSONResponse(Response):
    """A non-streaming answer that takes as long as the equivalent stream would have.

    `overload` becomes the provider's error response (`failure_status`/`failure_body`), `stall`
    holds the response back, `cut` sends the headers and half the body, then drops the connection.
    """

    def __init__(
        self,
        turn: Turn,
        body: dict[str, Any],
        headers: dict[str, str],
        failure_status: int,
        failure_body: dict[str, Any],
        success: Outcome = "completed",
    ) -> None:
        super().__init__(status_code=200)
        self._turn = turn
        self._body = body
        self._json_headers = {"content-type": "application/json"}
        self._json_headers.update(headers)
        self._failure_status = failure_status
        self._failure_body = failure_body
        self._success = success

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        behaviour = self._turn.behaviour

        async def run() -> Outcome:
            generation_ms = (
                behaviour.header_delay_ms
                + behaviour.first_delta_delay_ms
                + behaviour.pacing_ms * max(0, behaviour.deltas - 1)
            )
            if generation_ms > 0:
                await asyncio.sleep(generation_ms / 1000)
            if behaviour.kind == "stall":
                await asyncio.sleep(MAX_STALL_S if behaviour.stall_ms is None else behaviour.stall_ms / 1000)
                if behaviour.stall_ms is None:
                    return "cut"
            if behaviour.kind == "overload":
                payload = dumps(self._failure_body).encode()
                self._turn.finish("error", self._failure_status)
                await self._send_whole(send, self._failure_status, payload)
                return "error"
            body = self._body
            if behaviour.extra_field is not None:  # a field a newer upstream adds (CLIENT-7)
                body = {**body, behaviour.extra_field: True}
            payload = dumps(body).encode()
            if behaviour.kind == "cut":
                headers = dict(self._json_headers, **{"content-length": str(len(payload))})
                await send({"type": "http.response.start", "status": 200, "headers": _header_list(headers)})
                await send(
                    {"type": "http.response.body", "body": payload[: len(payload) // 2], "more_body": True}
                )
                return "cut"
            self._turn.finish(self._success, 200)
            await self._send_whole(send, 200, payload)
            return self._success

        outcome = await _race(asyncio.ensure_future(run()), receive)
        status = self._failure_status if outcome == "error" else 200
        self._turn.finish(outcome, status)

    async def _send_whole(self, send: Send, status: int, payload: bytes) -> None:
        headers = dict(self._json_headers, **{"content-length": str(len(payload))})
        await send({"type": "http.response.start", "status": status, "headers": _header_list(headers)})
        await send({"type": "http.response.body", "body": payload, "more_body": False})


class DelayedResponse(Response):
    """Send `inner` after `delay_ms` (the scripted slow headers), finishing `turn` if given."""

    def __init__(
        self, inner: Response, delay_ms: float, turn: Turn | None = None, outcome: Outcome = "error"
    ):
        super().__init__(status_code=inner.status_code)
        self._inner = inner
        self._delay_ms = delay_ms
        self._turn = turn
        self._outcome = outcome

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def run() -> Outcome:
            if self._delay_ms > 0:
                await asyncio.sleep(self._delay_ms / 1000)
            if self._turn is not None:
                self._turn.finish(self._outcome, self._inner.status_code)
            await self._inner(scope, receive, send)
            return self._outcome

        outcome = await _race(asyncio.ensure_future(run()), receive)
        if self._turn is not None:
            self._turn.finish(outcome, self._inner.status_code)
