"""A lean upstream for the benchmarks: a bare ASGI app that answers with canned bytes.

It speaks just enough of three protocols to be an upstream for the gateway and for LiteLLM:

* Codex Responses at ``POST /backend-api/codex/responses``: the SSE sequence the simulator sends
  (``response.created`` … ``response.completed``) with its ``x-codex-*`` rate-limit headers, or one
  JSON object when the body says ``"stream":false`` (the "direct, non-streaming" baseline); and the
  account's model list at ``GET /backend-api/codex/models`` (the gateway's catalogue, CAT-1);
* Anthropic Messages at ``POST /v1/messages`` (SSE, or JSON when the body says ``"stream":false``
  or leaves it out), a Claude upstream for the translation pricing (no rate-limit headers);
* OpenAI Chat Completions at ``POST /v1/chat/completions`` (JSON or SSE), LiteLLM's upstream.

No authentication, no JSON parsing on the hot path: the shape of an answer comes from a marker in
the request body, ``bench:deltas=N,pacing=MS`` (plus ``bench:noquota``: no ``x-codex-*`` rate-limit
headers, so the gateway has no quota signal to observe; ``bench:ratelimit``: every other such call
a 429 with ``Retry-After: 1``) (the driver puts it in ``instructions`` or the system message, which both
proxies forward untouched). Without a marker: 4 deltas, no pacing.

A client that leaves a paced stream is noticed at once (a task waits on ``http.disconnect``); the
time (``time.monotonic()``, shared by all processes on Linux) is kept for ``GET /_mock/stats`` so
the cancellation scenario can tell how fast the gateway let go of its upstream.

An idle connection is kept ``BENCH_MOCK_KEEPALIVE_S`` seconds (default 400), as Cloudflare keeps
an HTTP/1.1 client connection in front of the Codex upstream (chatgpt.com answers carry ``cf-ray``,
PROTOCOLS.md; Cloudflare's documented "Connection Keep-Alive HTTP/1.1" limit): the gateway's pool
(30 s) then reuses its upstream connections between bursts a few seconds apart, as it would there.
uvicorn's own default (5 s) closed every one between two bursts of ``bench/streams.py``:
``BENCH_MOCK_KEEPALIVE_S=5`` measures a burst on a cold pool (issue #49, BENCHMARKS.md).

Run: ``python bench/mock.py --port 9100`` (uvicorn, httptools, uvloop, one worker).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import time
from collections import deque
from typing import Any

import uvicorn

Scope = dict[str, Any]
RATE_LIMITED = b'{"error":{"type":"rate_limit_exceeded","message":"Rate limit reached (bench)."}}'
RATE_LIMITED_HEADERS = [(b"content-type", b"application/json"), (b"retry-after", b"1")]
MARKER = re.compile(rb"bench:deltas=(\d+),pacing=(\d+)")
DEFAULT = (4, 0)
CHUNK = {"type": "http.response.body", "body": b"", "more_body": True}

_stats: dict[str, Any] = {"requests": 0, "streams_open": 0, "peak_streams": 0, "cancelled": 0}
_disconnects: deque[float] = deque(maxlen=1000)


def _frame(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _response(status: str, text: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    output = (
        [
            {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
            }
        ]
        if status == "completed"
        else []
    )
    return {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": "gpt-5-codex",
        "output": output,
        "parallel_tool_calls": False,
        "store": False,
        "usage": usage,
        "metadata": {},
    }


USAGE = {
    "input_tokens": 20,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 4,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 24,
}
WORD = " word"


def _codex_parts(deltas: int) -> tuple[bytes, bytes, bytes]:
    """(prelude, one delta frame without its sequence number varying, epilogue)."""
    text = WORD * deltas
    prelude = _frame(
        "response.created",
        {"type": "response.created", "response": _response("in_progress", "", None), "sequence_number": 0},
    )
    prelude += _frame(
        "response.in_progress",
        {
            "type": "response.in_progress",
            "response": _response("in_progress", "", None),
            "sequence_number": 1,
        },
    )
    item = {"id": "msg_bench", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    prelude += _frame(
        "response.output_item.added",
        {"type": "response.output_item.added", "output_index": 0, "item": item, "sequence_number": 2},
    )
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    prelude += _frame(
        "response.content_part.added",
        {
            "type": "response.content_part.added",
            "item_id": "msg_bench",
            "output_index": 0,
            "content_index": 0,
            "part": part,
            "sequence_number": 3,
        },
    )
    delta = _frame(
        "response.output_text.delta",
        {
            "type": "response.output_text.delta",
            "item_id": "msg_bench",
            "output_index": 0,
            "content_index": 0,
            "delta": WORD,
            "logprobs": [],
            "sequence_number": 4,
        },
    )
    done = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    epilogue = _frame(
        "response.output_text.done",
        {
            "type": "response.output_text.done",
            "item_id": "msg_bench",
            "output_index": 0,
            "content_index": 0,
            "text": text,
            "logprobs": [],
            "sequence_number": 5,
        },
    )
    epilogue += _frame(
        "response.content_part.done",
        {
            "type": "response.content_part.done",
            "item_id": "msg_bench",
            "output_index": 0,
            "content_index": 0,
            "part": done,
            "sequence_number": 6,
        },
    )
    epilogue += _frame(
        "response.output_item.done",
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": _response("completed", text, None)["output"][0],
            "sequence_number": 7,
        },
    )
    epilogue += _frame(
        "response.completed",
        {"type": "response.completed", "response": _response("completed", text, USAGE), "sequence_number": 8},
    )
    return prelude, delta, epilogue


def _chat_parts(deltas: int) -> tuple[bytes, bytes, bytes, bytes]:
    """(prelude, delta, epilogue, the non-streaming JSON) of Chat Completions."""
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-5-codex",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"

    usage = {"prompt_tokens": 20, "completion_tokens": deltas, "total_tokens": 20 + deltas}
    prelude = chunk({"role": "assistant", "content": ""})
    delta = chunk({"content": WORD})
    epilogue = chunk({}, "stop") + b"data: [DONE]\n\n"
    message = {"role": "assistant", "content": WORD * deltas}
    whole = base | {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage,
    }
    return prelude, delta, epilogue, json.dumps(whole, separators=(",", ":")).encode()


def _messages_parts(deltas: int) -> tuple[bytes, bytes, bytes, bytes]:
    """(prelude, delta, epilogue, the non-streaming JSON) of Anthropic Messages."""
    text = WORD * deltas
    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE_MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 1},
    }
    prelude = _frame("message_start", {"type": "message_start", "message": message})
    prelude += _frame(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    delta = _frame(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": WORD}},
    )
    epilogue = _frame("content_block_stop", {"type": "content_block_stop", "index": 0})
    epilogue += _frame(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": deltas},
        },
    )
    epilogue += _frame("message_stop", {"type": "message_stop"})
    whole = message | {
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": deltas},
    }
    return prelude, delta, epilogue, json.dumps(whole, separators=(",", ":")).encode()


CLAUDE_MODEL = "claude-haiku-4-5"
CODEX_MODELS = json.dumps({"models": [{"slug": "gpt-5-codex", "visibility": "list"}]}).encode()

CODEX_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-codex-active-limit", b"codex"),
    (b"x-codex-plan-type", b"plus"),
    (b"x-codex-primary-used-percent", b"1"),
    (b"x-codex-primary-window-minutes", b"300"),
    (b"x-codex-primary-reset-after-seconds", b"18000"),
    (b"x-codex-secondary-used-percent", b"1"),
    (b"x-codex-secondary-window-minutes", b"10080"),
    (b"x-codex-secondary-reset-after-seconds", b"604800"),
    (b"x-request-id", b"req_bench"),
]
# Without the rate-limit family: prices the quota signals (nothing for the gateway to observe).
PLAIN_CODEX_HEADERS = [h for h in CODEX_HEADERS if not h[0].startswith(b"x-codex-")]
JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]

_cache: dict[tuple[str, int], tuple[bytes, ...]] = {}


def _parts(kind: str, deltas: int) -> tuple[bytes, ...]:
    key = (kind, deltas)
    if key not in _cache:
        build = {"codex": _codex_parts, "chat": _chat_parts, "messages": _messages_parts}[kind]
        _cache[key] = build(deltas)
    return _cache[key]


async def _read_body(receive: Any) -> bytes:
    body = b""
    for _ in range(10_000):  # bounded: a bench request body is a few hundred bytes
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    return body


async def _send_whole(send: Any, headers: list[tuple[bytes, bytes]], body: bytes, status: int = 200) -> None:
    length = (b"content-length", str(len(body)).encode())
    await send({"type": "http.response.start", "status": status, "headers": [*headers, length]})
    await send({"type": "http.response.body", "body": body})


async def _stream(
    send: Any, headers: list[tuple[bytes, bytes]], parts: tuple[bytes, ...], deltas: int, pacing_ms: int
) -> None:
    prelude, delta, epilogue = parts[0], parts[1], parts[2]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    if pacing_ms <= 0:  # instant: the whole answer in one write
        await send({"type": "http.response.body", "body": prelude + delta * deltas + epilogue})
        return
    await send({"type": "http.response.body", "body": prelude + delta, "more_body": True})
    pause = pacing_ms / 1000
    for _ in range(deltas - 1):
        await asyncio.sleep(pause)
        await send({"type": "http.response.body", "body": delta, "more_body": True})
    await send({"type": "http.response.body", "body": epilogue})


async def _stream_watched(receive: Any, send: Any, *args: Any) -> None:
    """Stream while waiting for the client to leave; a departure cancels the stream at once."""
    _stats["streams_open"] += 1
    _stats["peak_streams"] = max(_stats["peak_streams"], _stats["streams_open"])

    async def gone() -> None:
        for _ in range(1_000_000):
            if (await receive())["type"] == "http.disconnect":
                return

    streaming = asyncio.ensure_future(_stream(send, *args))
    watching = asyncio.ensure_future(gone())
    try:
        done, _ = await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
        if watching in done and not streaming.done():
            _disconnects.append(time.monotonic())
            _stats["cancelled"] += 1
            streaming.cancel()
        else:
            watching.cancel()
    finally:
        _stats["streams_open"] -= 1


async def app(scope: Scope, receive: Any, send: Any) -> None:
    """The ASGI entry point."""
    if scope["type"] != "http":
        return
    path: str = scope["path"]
    if path == "/_mock/stats":
        stats = _stats | {"disconnects": list(_disconnects)}
        await _send_whole(send, JSON_HEADERS, json.dumps(stats).encode())
        return
    if path.endswith("/codex/models"):
        await _send_whole(send, JSON_HEADERS, CODEX_MODELS)
        return
    body = await _read_body(receive)
    _stats["requests"] += 1
    match = MARKER.search(body)
    deltas, pacing = (int(match[1]), int(match[2])) if match else DEFAULT
    if b"bench:ratelimit" in body:  # bench/alerts.py: every other call cools its account for 1 s
        _stats["ratelimited"] = _stats.get("ratelimited", 0) + 1
        if _stats["ratelimited"] % 2:
            await _send_whole(send, RATE_LIMITED_HEADERS, RATE_LIMITED, status=429)
            return
    if path.endswith("/responses"):
        if b'"stream":false' in body or b'"stream": false' in body:
            text = WORD * deltas
            await _send_whole(send, JSON_HEADERS, json.dumps(_response("completed", text, USAGE)).encode())
            return
        headers = PLAIN_CODEX_HEADERS if b"bench:noquota" in body else CODEX_HEADERS
        parts = _parts("codex", deltas)
    elif path.endswith(("/v1/messages", "/chat/completions")):  # streams only when asked to
        parts = _parts("messages" if path.endswith("/v1/messages") else "chat", deltas)
        if not (b'"stream":true' in body or b'"stream": true' in body):
            await _send_whole(send, JSON_HEADERS, parts[3])
            return
        headers = SSE_HEADERS
    else:
        await _send_whole(send, JSON_HEADERS, b'{"detail":"not found"}', status=404)
        return
    if pacing > 0:
        await _stream_watched(receive, send, headers, parts, deltas, pacing)
    else:
        await _stream(send, headers, parts, deltas, pacing)


KEEPALIVE_S = float(os.environ.get("BENCH_MOCK_KEEPALIVE_S", "400"))


def main() -> None:
    """``python bench/mock.py --port N``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        loop="uvloop",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
        backlog=4096,
        timeout_keep_alive=KEEPALIVE_S,
    )


if __name__ == "__main__":
    main()
