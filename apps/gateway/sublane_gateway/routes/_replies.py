"""Pipeline replies as ASGI responses, written with as little work per call as the protocol allows.

They are Starlette ``Response`` objects (the FastAPI routes return them), but they build their raw
headers in one pass and, for a stream, watch for the client leaving with one plain task instead of
Starlette's task group, cancel scope and event per response (issue #19; measured in BENCHMARKS.md).
Headers and bytes on the wire are those Starlette would send: ``content-length`` for a JSON body,
``text/event-stream; charset=utf-8`` for a stream, the reply's own headers lower-cased.

One :class:`ClientWatch` per call watches the ASGI ``receive`` for the client leaving, from the
moment its body is read until its answer ends: while the pipeline waits (for a slot, the upstream's
head, a JSON answer) or a stream waits for its next chunk, a disconnect cancels that wait (ADM-6),
and the pipeline's own handlers record ``canceled`` and give the slot back.
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


class ClientWatch:
    """Watches one call's client with one task: when it leaves while :attr:`waiting` is set, the
    call's task is cancelled there (its waits are the pipeline's, which finish the call as
    ``canceled``). The task's only work per call is one ``receive`` that ends at the disconnect
    or at :meth:`close`; nothing is done per chunk."""

    __slots__ = ("left", "task", "waiting", "watcher")

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        self.waiting = False
        self.left = False
        self.watcher: asyncio.Task[None] | None = asyncio.create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.left = True
        if self.waiting:  # the call's task is suspended in a wait of the pipeline: the cancel lands there
            self.task.cancel()

    def delivered(self) -> bool:
        """After a ``CancelledError``: whether it was this watch's (the client left), now taken
        back so that the request ends quietly; ``False``: someone else's, to raise on."""
        if not self.left:
            return False
        self.task.uncancel()
        return True

    def close(self) -> None:
        """Stop watching (let go of the watcher: a cancelled task's error refers back to us)."""
        self.waiting = False
        watcher = self.watcher
        if watcher is not None:
            self.watcher = None
            watcher.cancel()


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
        names = dict(raw)  # the names given, looked up in C
        if b"content-length" not in names and not (reply.status < 200 or reply.status in (204, 304)):
            raw.append((b"content-length", str(len(reply.content)).encode("latin-1")))
        if b"content-type" not in names:
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

    def __init__(self, reply: StreamReply, watch: ClientWatch | None = None) -> None:
        self.status_code = 200
        self.background = None
        self.chunks = reply.chunks
        self.watch = watch
        raw = _raw_headers(reply.headers) if reply.headers else []
        if b"content-type" not in dict(raw):
            media_type = reply.media_type
            if media_type.startswith("text/") and "charset=" not in media_type.lower():
                media_type += "; charset=utf-8"
            raw.append((b"content-type", media_type.encode("latin-1")))
        self.raw_headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks: AsyncIterator[bytes] = self.chunks
        watch = self.watch or ClientWatch(receive)  # the call's, from before the stream began
        try:
            self.started = True
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            while True:  # the relay is always entered: its ``finally`` is what finishes the call
                watch.waiting = True
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                finally:
                    watch.waiting = False
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if watch.left:
                    break
        except asyncio.CancelledError:
            if not watch.delivered():
                raise
        finally:
            watch.close()
            await _close(chunks)


async def _close(chunks: AsyncIterator[bytes]) -> None:
    """Close the relay (its ``finally`` finishes the call) if it is not finished already."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()


def to_response(reply: Reply, watch: ClientWatch | None = None) -> Response:
    """The ASGI response of a pipeline reply; a stream goes on with the call's ``watch``."""
    if isinstance(reply, StreamReply):
        return StreamReplyResponse(reply, watch)
    if watch is not None:
        watch.close()
    return JsonReplyResponse(reply)
