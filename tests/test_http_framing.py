"""OPS-1: what is wrong with a request's HTTP framing is answered in its route's error shape.

A request head larger than 64 KiB is answered ``431 headers_too_large`` and its connection closed;
a large head within the bound is served. A request that is not well-formed HTTP/1.1 (a space or a
control byte in its target, a bad header name, ``Content-Length`` with ``Transfer-Encoding``, a bad
chunk size) is answered ``400 malformed_http`` in its route's shape, not uvicorn's plain text.

Found by bad-input sweeps: a 1 MB header and 3,000 headers were read whole (httptools, unlike h11,
bounds nothing), and a malformed request got ``text/plain`` "Invalid HTTP request received." on
every route. Raw sockets against a real gateway.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable

from gateway_pool import Pool

from sublane_gateway._framing import MAX_HEAD_BYTES


def _exchange(pool: Pool, request: bytes) -> bytes:
    port = int(pool.gateway.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)  # may be closed while the rest of the head is still being sent
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
        return received


def _status_and_body(answer: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_ops_1_a_head_past_64_kib_is_431_in_the_routes_shape_and_the_connection_closes(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    key = f"Authorization: Bearer {pool.key}\r\n"
    filler = "x-filler: " + "a" * 1000 + "\r\n"
    many = filler * (MAX_HEAD_BYTES // len(filler) + 2)  # past the bound by a few headers
    cases = [
        ("/v1/responses", key + many, "openai"),
        ("/v1/messages", key + "x-big: " + "b" * 1_000_000 + "\r\n", "anthropic"),
        ("/v1beta/models/gemini-3-flash:generateContent", many, "gemini"),
        ("/api/auth/login", many, "sublane"),
    ]
    for path, headers, shape in cases:
        request = f"POST {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Length: 2\r\n\r\n{{}}".encode()
        status, body = _status_and_body(_exchange(pool, request))
        assert status == 431, (path, status, body)
        if shape == "gemini":
            error = body["error"]
            assert isinstance(error, dict) and error["status"] == "INVALID_ARGUMENT", body
            assert error["details"][0]["reason"] == "headers_too_large"
        elif shape == "anthropic":
            assert body["type"] == "error" and body["error"]["code"] == "headers_too_large", body  # type: ignore[index]
        else:
            assert _shape_of(body, shape, "headers_too_large"), body
    assert pool.client().get("/healthz").status_code == 200  # the gateway goes on


def test_ops_1_a_large_head_within_the_bound_is_served(make_pool: Callable[..., Pool]) -> None:
    pool = make_pool()
    filler = "x-filler: " + "a" * 1000 + "\r\n"
    headers = filler * 40  # ~40 KiB, across several reads
    body = json.dumps({"model": "gpt-5-codex", "input": "hi"})
    request = (
        f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {pool.key}\r\n{headers}"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
    ).encode()
    status, answer = _status_and_body(_exchange(pool, request))
    assert status == 200, answer


def test_ops_1_a_head_whose_blank_line_is_split_across_reads_does_not_count_its_body(
    make_pool: Callable[..., Pool],
) -> None:
    """The head's last line break arrives alone before a 200 KB body: the body is not the head's."""
    pool = make_pool()
    body = json.dumps({"model": "gpt-5-codex", "input": "x" * 200_000}).encode()
    head = (
        f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {pool.key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r"
    ).encode()
    port = int(pool.gateway.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(head)
        time.sleep(0.2)  # the gateway reads the head without its last byte
        sock.sendall(b"\n" + body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status, answer = _status_and_body(received)
    assert status == 200, answer


def _shape_of(body: dict[str, object], shape: str, code: str) -> bool:
    error = body["error"]
    assert isinstance(error, dict), body
    if shape == "gemini":
        return error["status"] == "INVALID_ARGUMENT" and error["details"][0]["reason"] == code
    if shape == "anthropic":
        return body["type"] == "error" and error["code"] == code
    if shape == "openai":
        return error["code"] == code and error["type"] == "invalid_request_error"
    return set(error) == {"code", "message"} and error["code"] == code  # SubLane's own


def test_ops_1_a_request_that_is_not_well_formed_http_is_400_in_its_routes_shape(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool()
    key = f"Authorization: Bearer {pool.key}\r\n".encode()
    cases = [
        (b"GET /v1/mo dels HTTP/1.1\r\nHost: x\r\n" + key + b"\r\n", "openai"),
        (b"GET /v1/models\x01 HTTP/1.1\r\nHost: x\r\n" + key + b"\r\n", "openai"),
        (b"GET /v1/models\xff HTTP/1.1\r\nHost: x\r\n\r\n", "openai"),
        (
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\nContent-Length: 2\r\n\r\n{}",
            "anthropic",
        ),
        (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\n" + key + b"Content-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "openai",
        ),
        (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\n" + key + b"Transfer-Encoding: chunked\r\n\r\n"
            b"zz\r\n{}\r\n0\r\n\r\n",
            "openai",
        ),
        (
            b"POST /v1beta/models/gemini-3-flash:generateContent HTTP/1.1\r\nContent-Length: abc\r\n\r\n{}",
            "gemini",
        ),
        (b"GET /api/me HTTP/3.0\r\nHost: x\r\n\r\n", "sublane"),
    ]
    for request, shape in cases:
        answer = _exchange(pool, request)
        assert b"\r\ncontent-type: application/json\r\n" in answer.partition(b"\r\n\r\n")[0], answer
        status, body = _status_and_body(answer)
        assert status == 400 and _shape_of(body, shape, "malformed_http"), (request, body)
        error = body["error"]
        assert isinstance(error, dict) and "well-formed HTTP/1.1" in str(error["message"]), body
    # a keep-alive connection: the first request is served, the malformed second refused in the shape
    good = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + key + b"\r\n"
    port = int(pool.gateway.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(good)
        first = sock.recv(65536)
        while b'"object":"list"' not in first or not first.endswith(b"}"):
            first += sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 "), first
        sock.sendall(b"\x00garbage\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status, body = _status_and_body(received)
    assert status == 400 and _shape_of(body, "sublane", "malformed_http"), body
    assert pool.client().get("/healthz").status_code == 200  # the gateway goes on


def _upgrade(pool: Pool, extra: str) -> bytes:
    return (
        f"GET /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {pool.key}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"OpenAI-Beta: responses_websockets=2026-02-06\r\n{extra}\r\n"
    ).encode()


def _answer_head(pool: Pool, parts: list[bytes]) -> bytes:
    """Sends ``parts`` apart (each its own read) and returns the answer's head, or what came before
    the connection closed."""
    port = int(pool.gateway.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for index, part in enumerate(parts):
            if index:
                time.sleep(0.2)
            sock.sendall(part)
        received = b""
        while b"\r\n\r\n" not in received and (chunk := sock.recv(65536)):
            received += chunk
        if received.startswith(b"HTTP/1.1 431"):
            while chunk := sock.recv(65536):
                received += chunk
        return received


def test_ops_4_a_websocket_upgrade_websockets_cannot_read_is_431_not_left_open(
    make_pool: Callable[..., Pool],
) -> None:
    """uvicorn hands an upgrade to websockets, which reads lines of 8,192 bytes and 128 headers at
    most: past that it answered nothing and left the connection open as long as the client waited."""
    pool = make_pool()
    long_line = _upgrade(pool, "x-big: " + "a" * 9000 + "\r\n")
    many = _upgrade(pool, "".join(f"x-h{index}: v\r\n" for index in range(130)))
    for parts in ([long_line], [many], [long_line[:4000], long_line[4000:]]):
        answer = _answer_head(pool, parts)
        status, body = _status_and_body(answer)
        assert status == 431 and _shape_of(body, "openai", "headers_too_large"), body
        assert "8192 bytes" in str(body["error"]["message"]), body  # type: ignore[index]
    # within websockets' bounds: upgraded
    fits = _upgrade(
        pool, "x-big: " + "a" * 8000 + "\r\n" + "".join(f"x-h{index}: v\r\n" for index in range(100))
    )
    assert _answer_head(pool, [fits]).startswith(b"HTTP/1.1 101 "), "the upgrade within the bounds"
