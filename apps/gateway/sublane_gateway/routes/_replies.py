"""Pipeline replies as ASGI responses, written with as little work per call as the protocol allows.

They are Starlette ``Response`` objects (the FastAPI routes return them), but they build their raw
headers in one pass and, for a stream, watch for the client leaving with one plain task instead of
Starlette's task group, cancel scope and event per response (issue #19; measured in BENCHMARKS.md).
Headers and bytes on the wire are those Starlette would send: ``content-length`` for a JSON body,
``text/event-stream; charset=utf-8`` for a stream, the reply's own headers lower-cased.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from sublane_gateway.pipeline import JsonReply, Reply, StreamReply

_JSON_TYPE = (b"content-type", b"application/json")


def _raw_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


def _without(raw: list[tuple[bytes, bytes]], name: bytes) -> bool:
    return all(key != name for key, _ in raw)


class ReplyResponse(Response):
    """A pipeline reply's response; ``started`` once its status line went out (so that a failure
    after that point gets no 500 of its own: the client already has an answer under way)."""

    started = False


class JsonReplyResponse(ReplyResponse):
    """A whole JSON body."""

    def __init__(self, reply: JsonReply) -> None:
        self.status_code = reply.status
        self.body = reply.content
        self.background = None
        raw = _raw_headers(reply.headers) if reply.headers else []
        if _without(raw, b"content-length") and not (reply.status < 200 or reply.status in (204, 304)):
            raw.append((b"content-length", str(len(reply.content)).encode("latin-1")))
        if _without(raw, b"content-type"):
            raw.append(_JSON_TYPE)
        self.raw_headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.started = True
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body})


class StreamReplyResponse(ReplyResponse):
    """An event stream relayed chunk by chunk until it ends or the client leaves.

    When the client leaves while the relay waits for the upstream, that wait is cancelled (the
    relay then drains the upstream in the background, ADM-8); when it leaves while a chunk is being
    written, the relay is closed after that write.
    """

    def __init__(self, reply: StreamReply) -> None:
        self.status_code = 200
        self.background = None
        self.chunks = reply.chunks
        raw = _raw_headers(reply.headers) if reply.headers else []
        if _without(raw, b"content-type"):
            media_type = reply.media_type
            if media_type.startswith("text/") and "charset=" not in media_type.lower():
                media_type += "; charset=utf-8"
            raw.append((b"content-type", media_type.encode("latin-1")))
        self.raw_headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        chunks: AsyncIterator[bytes] = self.chunks
        waiting = left = False

        async def watch() -> None:
            nonlocal left
            while (await receive())["type"] != "http.disconnect":
                pass
            left = True
            if waiting:  # the relay task is suspended inside the relay: the cancel lands there
                task.cancel()

        watcher = asyncio.create_task(watch())
        try:
            self.started = True
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            while True:  # the relay is always entered: its ``finally`` is what finishes the call
                waiting = True
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                finally:
                    waiting = False
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if left:
                    break
        except asyncio.CancelledError:
            if not left:
                raise
            task.uncancel()  # our own cancel, delivered: the request ends quietly, as it left
        finally:
            watcher.cancel()
            await _close(chunks)


async def _close(chunks: AsyncIterator[bytes]) -> None:
    """Close the relay (its ``finally`` finishes the call) if it is not finished already."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()


def to_response(reply: Reply) -> Response:
    """The ASGI response of a pipeline reply."""
    if isinstance(reply, StreamReply):
        return StreamReplyResponse(reply)
    return JsonReplyResponse(reply)
