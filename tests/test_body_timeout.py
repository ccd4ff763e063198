"""OPS-4 (amendment, turn 4): a request body must arrive within ``SUBLANE_BODY_TIMEOUT_S`` of its
headers, else ``408`` and the connection closes — on every route, signed in or not.

Found by probing: a body shorter than its ``Content-Length``, or a chunked body that never ends,
held its connection for ever (unauthenticated ``POST /api/auth/login`` included; 500 such
connections were all held). Raw sockets against a real gateway whose body timeout is 1 s.
"""

from __future__ import annotations

import json
import selectors
import socket
import time
from collections.abc import Callable

from gateway_pool import Pool

TIMEOUT_S = 1.0
SLACK_S = 1.5


def _port(pool: Pool) -> int:
    return int(pool.gateway.url.rsplit(":", 1)[1])


def _short(path: str, headers: str = "") -> bytes:
    """A request whose body is 40 bytes short of its ``Content-Length``."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{headers}"
        f'Content-Length: 50\r\n\r\n{{"model": '
    ).encode()


def _endless(path: str, headers: str = "") -> bytes:
    """A chunked request whose body never ends (no last chunk)."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{headers}"
        'Transfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n'
    ).encode()


def _answer_then_close(sock: socket.socket, started: float) -> tuple[bytes, float]:
    """Everything the gateway sends until it closes, and when it closed (seconds from ``started``)."""
    sock.settimeout(TIMEOUT_S + SLACK_S + 3)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def _status_and_body(answer: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower(), head
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_ops_4_body_timeout_a_short_or_endless_body_gets_408_and_loses_its_socket(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(body_timeout_s=TIMEOUT_S)
    key = f"Authorization: Bearer {pool.key}\r\n"
    gemini = "/v1beta/models/gemini-3-flash:generateContent"
    cases = [
        (_short("/v1/responses", key), "openai"),
        (_endless("/v1/responses", key), "openai"),
        (_short("/v1/messages", key), "anthropic"),
        (_endless(gemini, f"x-goog-api-key: {pool.key}\r\n"), "gemini"),
        (_short("/api/auth/login"), "sublane"),  # not signed in
        (_endless("/api/auth/login"), "sublane"),
        (_short("/api/users", f"Cookie: {_cookie(pool)}\r\n"), "sublane"),  # signed in
    ]
    for request, shape in cases:
        with socket.create_connection(("127.0.0.1", _port(pool))) as sock:
            sock.sendall(request)
            started = time.monotonic()
            answer, closed_after = _answer_then_close(sock, started)
        assert TIMEOUT_S - 0.1 <= closed_after <= TIMEOUT_S + SLACK_S, (request, closed_after)
        status, body = _status_and_body(answer)
        assert status == 408, answer
        error = body["error"]
        assert isinstance(error, dict)
        if shape == "anthropic":
            assert body["type"] == "error" and error["code"] == "body_timeout", body
        elif shape == "gemini":
            assert error["code"] == 408 and error["status"] == "DEADLINE_EXCEEDED", body
        else:
            assert error["code"] == "body_timeout", body
    assert pool.client().get("/v1/models").status_code == 200  # the gateway serves on


def test_ops_4_body_timeout_a_refused_request_whose_body_never_ends_loses_its_socket(
    make_pool: Callable[..., Pool],
) -> None:
    """A model call without a key is refused (401) before its body is read; the rest of that body
    never comes: the connection still closes at the body's deadline."""
    pool = make_pool(body_timeout_s=TIMEOUT_S)
    with socket.create_connection(("127.0.0.1", _port(pool))) as sock:
        sock.sendall(_endless("/v1/responses"))
        started = time.monotonic()
        answer, closed_after = _answer_then_close(sock, started)
    assert answer.startswith(b"HTTP/1.1 401") and closed_after <= TIMEOUT_S + SLACK_S


def test_ops_4_body_timeout_many_held_connections_are_all_answered_and_closed(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(body_timeout_s=TIMEOUT_S)
    count = 300
    sockets = []
    selector = selectors.DefaultSelector()
    try:
        for index in range(count):
            sock = socket.create_connection(("127.0.0.1", _port(pool)))
            sock.sendall(_short("/api/auth/login") if index % 2 else _endless("/api/auth/login"))
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, bytearray())
            sockets.append(sock)
        started = time.monotonic()
        closed = 0
        answers: list[bytes] = []
        while closed < count and time.monotonic() - started < TIMEOUT_S + SLACK_S + 2:
            for ready, _ in selector.select(timeout=0.1):
                sock, received = ready.fileobj, ready.data
                assert isinstance(sock, socket.socket)
                chunk = sock.recv(65536)
                if chunk:
                    received += chunk
                    continue
                selector.unregister(sock)
                answers.append(bytes(received))
                closed += 1
        elapsed = time.monotonic() - started
    finally:
        selector.close()
        for sock in sockets:
            sock.close()
    assert closed == count, f"{count - closed} connections still held after {elapsed:.1f} s"
    assert elapsed <= TIMEOUT_S + SLACK_S + 1, elapsed
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers)


def test_ops_4_body_timeout_a_slow_body_that_arrives_in_time_is_served(
    make_pool: Callable[..., Pool],
) -> None:
    pool = make_pool(body_timeout_s=TIMEOUT_S)
    body = json.dumps({"username": "admin", "password": "admin-pass-1"}).encode()
    with socket.create_connection(("127.0.0.1", _port(pool))) as sock:
        sock.sendall(
            b"POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        for piece in (body[:10], body[10:]):
            time.sleep(0.4)
            sock.sendall(piece)
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        time.sleep(TIMEOUT_S + 0.3)  # the body's deadline is over with the body: the socket stays
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def _cookie(pool: Pool) -> str:
    return "; ".join(f"{name}={value}" for name, value in pool.admin.cookies.items())
