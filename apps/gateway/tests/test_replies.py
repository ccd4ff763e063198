"""Pipeline replies as ASGI responses (routes/_replies.py): Starlette's bytes, cheaper (issue #19).

The client leaving is what matters most: the relay must learn it at once, even while it waits for
a quiet upstream, so that the call is finished and its slot freed (ADM-6, ADM-8).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.responses import Response, StreamingResponse

from sublane_gateway.pipeline import JsonReply, StreamReply
from sublane_gateway.routes._replies import JsonReplyResponse, StreamReplyResponse, to_response

Message = dict[str, Any]


async def _starlette_messages(response: Response) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    await response({"type": "http", "asgi": {"spec_version": "2.4"}}, receive, send)
    return sent


@pytest.mark.parametrize(
    "reply",
    [
        JsonReply(200, b'{"a":1}', {"X-Request-Id": "req_1"}),
        JsonReply(429, b'{"error":{}}', {"retry-after": "3", "X-Token-Budget-Id": "7"}),
        JsonReply(204, b"", {}),
        JsonReply(200, b"{}", {"content-type": "application/problem+json"}),
    ],
)
async def test_a_json_reply_sends_what_starlette_would(reply: JsonReply) -> None:
    expected = Response(
        reply.content, status_code=reply.status, media_type="application/json", headers=reply.headers
    )
    assert await _starlette_messages(JsonReplyResponse(reply)) == await _starlette_messages(expected)


async def _three_chunks() -> AsyncIterator[bytes]:
    for index in range(3):
        yield b"data: %d\n\n" % index


async def test_a_stream_reply_sends_what_starlette_would() -> None:
    headers = {"x-request-id": "req_1", "cache-control": "no-cache"}
    ours = await _starlette_messages(StreamReplyResponse(StreamReply(_three_chunks(), headers)))
    theirs = await _starlette_messages(
        StreamingResponse(_three_chunks(), media_type="text/event-stream", headers=headers)
    )
    assert ours == theirs
    assert (b"content-type", b"text/event-stream; charset=utf-8") in ours[0]["headers"]


def test_to_response_picks_the_kind() -> None:
    assert isinstance(to_response(JsonReply(200, b"{}")), JsonReplyResponse)
    assert isinstance(to_response(StreamReply(_three_chunks())), StreamReplyResponse)


class _Relay:
    """A relay whose upstream goes quiet after one chunk; it records how it was ended."""

    def __init__(self) -> None:
        self.ended: str | None = None
        self.pulled = 0

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            yield b"data: first\n\n"
            self.pulled += 1
            await asyncio.Event().wait()  # the upstream says nothing more
            yield b"never"
        except asyncio.CancelledError:
            self.ended = "cancelled while waiting"
            raise
        except GeneratorExit:
            self.ended = "closed"
            raise


async def test_adm_6_a_client_leaving_while_the_upstream_is_quiet_ends_the_relay_at_once() -> None:
    relay = _Relay()
    left = asyncio.Event()
    sent: list[Message] = []

    async def receive() -> Message:
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    serving = asyncio.create_task(
        StreamReplyResponse(StreamReply(relay.chunks()))({"type": "http"}, receive, send)
    )
    await asyncio.sleep(0.05)
    left.set()
    await asyncio.wait_for(serving, 1.0)  # returns quietly: no CancelledError escapes the request
    assert relay.ended == "cancelled while waiting"
    assert [m.get("body") for m in sent[1:]] == [b"data: first\n\n"]
    assert not serving.cancelled() and serving.result() is None


async def test_adm_6_a_client_leaving_during_a_write_closes_the_relay_after_it() -> None:
    relay = _Relay()
    writing = asyncio.Event()
    release = asyncio.Event()
    left = asyncio.Event()

    async def receive() -> Message:
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message.get("body"):
            writing.set()
            await release.wait()  # a slow client: the write waits for the socket to drain

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while True:
                relay.pulled += 1
                yield b"data: x\n\n"
        except GeneratorExit:
            relay.ended = "closed"
            raise

    serving = asyncio.create_task(StreamReplyResponse(StreamReply(chunks()))({"type": "http"}, receive, send))
    await asyncio.wait_for(writing.wait(), 1.0)
    left.set()
    await asyncio.sleep(0.05)
    assert not serving.done()  # the write is not interrupted mid-chunk
    release.set()
    await asyncio.wait_for(serving, 1.0)
    assert relay.ended == "closed" and relay.pulled == 1  # nothing more pulled after the client left


async def test_a_cancel_from_the_server_still_propagates_and_closes_the_relay() -> None:
    relay = _Relay()

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        pass

    serving = asyncio.create_task(
        StreamReplyResponse(StreamReply(relay.chunks()))({"type": "http"}, receive, send)
    )
    await asyncio.sleep(0.05)
    serving.cancel()  # e.g. the server shutting down (ADM-9)
    with pytest.raises(asyncio.CancelledError):
        await serving
    assert relay.ended == "cancelled while waiting"


async def test_a_stream_that_ends_completes_the_response_and_stops_watching() -> None:
    sent: list[Message] = []
    receives = 0

    async def receive() -> Message:
        nonlocal receives
        receives += 1
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    tasks_before = len(asyncio.all_tasks())
    await StreamReplyResponse(StreamReply(_three_chunks()))({"type": "http"}, receive, send)
    await asyncio.sleep(0)
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert len(sent) == 5
    assert len(asyncio.all_tasks()) == tasks_before  # the disconnect watcher is gone


async def test_adm_6_a_client_gone_before_the_first_chunk_still_runs_the_relay_to_its_end() -> None:
    """The relay's own ``finally`` finishes the call and frees its slot: it must be entered even
    when the client left while the status line was being written (a server whose send waits)."""
    ended: list[str] = []
    left = asyncio.Event()

    async def receive() -> Message:
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            left.set()
            await asyncio.sleep(0.01)  # the client leaves while this write waits

    async def chunks() -> AsyncIterator[bytes]:
        try:
            yield b"data: 1\n\n"
            yield b"data: 2\n\n"
        finally:
            ended.append("relay finished")

    await asyncio.wait_for(StreamReplyResponse(StreamReply(chunks()))({"type": "http"}, receive, send), 1.0)
    assert ended == ["relay finished"]
