"""The limits on a request's HTTP framing and the answers the connection guard writes itself
(:mod:`sublane_gateway._connection_guard`), before uvicorn's protocol has the request: each a whole
response in its route's error shape (a client protocol's on the model routes, SubLane's own
elsewhere), on a connection that closes after it (OPS-1, OPS-4)."""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Final

from sublane_core import ERROR_CATALOGUE, json_dumps
from sublane_gateway._errors import client_protocol_of
from sublane_gateway.pipeline import error_reply

#: OPS-1: a request head (request line and headers) may hold this many bytes; more is answered
#: ``431 headers_too_large`` and the connection closed (httptools, unlike h11, sets no bound; real
#: clients send a few KiB, and 16 KiB is where h11 and Node stop).
MAX_HEAD_BYTES: Final = 64 * 1024


def body_timeout_answer(url: bytes) -> bytes:
    """The whole ``408 body_timeout`` response for a request to ``url``, in its route's error shape
    (a client protocol's on the model routes, SubLane's own elsewhere)."""
    return closing_answer(url, "body_timeout")


#: What websockets (uvicorn's WebSocket protocol) reads of an upgrade's head: its documented
#: ``WEBSOCKETS_MAX_LINE_LENGTH`` and ``WEBSOCKETS_MAX_NUM_HEADERS``, with their defaults.
WEBSOCKET_MAX_LINE: Final = int(os.environ.get("WEBSOCKETS_MAX_LINE_LENGTH", "8192"))
WEBSOCKET_MAX_HEADERS: Final = int(os.environ.get("WEBSOCKETS_MAX_NUM_HEADERS", "128"))


def websocket_head_fits(head: bytes) -> bool:
    """Whether websockets can read the upgrade request ``head`` begins with as uvicorn hands it on
    (each line rewritten ``name: value``, the value stripped): every line with its line break within
    :data:`WEBSOCKET_MAX_LINE`, at most :data:`WEBSOCKET_MAX_HEADERS` headers."""
    end = head.find(b"\r\n\r\n")
    if end == -1:  # no blank line of CRLFs: not a head httptools lets through; nothing to judge
        return True
    lines = head[:end].split(b"\r\n")
    if len(lines) - 1 > WEBSOCKET_MAX_HEADERS or len(lines[0]) + 2 > WEBSOCKET_MAX_LINE:
        return False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if len(name) + 2 + len(value.strip(b" \t")) + 2 > WEBSOCKET_MAX_LINE:
            return False
    return True


def request_target(data: bytes) -> bytes:
    """The target of the request line ``data`` begins with (``b""`` if none): where the parser
    stopped inside it, before any ``on_url``, it still chooses the error's shape."""
    line = data.partition(b"\n")[0]
    return line.partition(b" ")[2].partition(b" ")[0]


def closing_answer(url: bytes, code: str, message: str | None = None) -> bytes:
    """The whole response refusing a request to ``url`` with ``code`` (and the catalogue's message,
    or ``message``) before uvicorn has it, in its route's error shape, on a connection that closes
    after it."""
    spec = ERROR_CATALOGUE[code]
    message = message or spec.message
    path = url.partition(b"?")[0].decode("latin-1")
    protocol = client_protocol_of(path)
    if protocol is None:
        body = json_dumps({"error": {"code": code, "message": message}})
        headers: dict[str, str] = {}
    else:
        reply = error_reply(protocol, spec.status, code, message)
        body, headers = reply.content, reply.headers
    status = HTTPStatus(spec.status)
    head = [f"HTTP/1.1 {status.value} {status.phrase}".encode("ascii"), b"content-type: application/json"]
    head += [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
    head += [b"content-length: %d" % len(body), b"connection: close", b"", b""]
    return b"\r\n".join(head) + body
