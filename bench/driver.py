"""The load driver: raw HTTP/1.1 over asyncio streams, with a timestamp at every SSE frame boundary.

One ``Connection`` is one keep-alive socket. ``Connection.call`` writes a prepared request and reads
the answer: a ``Content-Length`` body, or a chunked one split into SSE frames at ``\\n\\n``; each
frame that carries text (a Responses ``output_text.delta``, a Messages ``text_delta`` or a Chat
Completions content delta) is timestamped with ``time.perf_counter()`` as it arrives. No HTTP
library sits between the clock and the socket.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

CALL_TIMEOUT_S = 60.0


@dataclass
class Target:
    """Where a request goes: address, path and the headers that authenticate it."""

    name: str
    host: str
    port: int
    path: str
    headers: dict[str, str]

    def request(self, body: bytes) -> bytes:
        """The raw request bytes for ``body``."""
        lines = [f"POST {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}", "", ""]
        return "\r\n".join(lines).encode() + body


@dataclass
class Result:
    """What one call saw, in ``perf_counter`` seconds."""

    status: int = 0
    start: float = 0.0
    headers_at: float = 0.0
    end: float = 0.0
    deltas: list[float] = field(default_factory=list)
    complete: bool = False
    error: str = ""
    body: bytes = b""  # a Content-Length body (errors come this way)
    aborted_at: float = 0.0  # perf_counter at an abort
    aborted_monotonic: float = 0.0  # time.monotonic() at the abort, comparable across processes

    @property
    def latency(self) -> float:
        """Request sent → whole answer read."""
        return self.end - self.start

    @property
    def ttft(self) -> float | None:
        """Request sent → first text frame."""
        return self.deltas[0] - self.start if self.deltas else None

    def gaps(self) -> list[float]:
        """Times between consecutive text frames."""
        return [b - a for a, b in zip(self.deltas, self.deltas[1:], strict=False)]


def _is_delta(frame: bytes) -> bool:
    if b"output_text.delta" in frame or b'"text_delta"' in frame:
        return True
    return b'"delta":{' in frame and b'"content":"' in frame and b'"content":""' not in frame


def _is_terminal(frame: bytes) -> bool:
    return b"response.completed" in frame or b"[DONE]" in frame or b"message_stop" in frame


class Connection:
    """One keep-alive HTTP/1.1 connection to a target."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(
                self.target.host, self.target.port, limit=1 << 20
            )
        return self._reader, self._writer

    def close(self) -> None:
        """Drop the socket (an abrupt close, as a client that goes away)."""
        if self._writer is not None:
            self._writer.transport.abort()
        self._reader = self._writer = None

    async def call(self, raw: bytes, abort_after_deltas: int = 0) -> Result:
        """Send ``raw`` and read the answer; with ``abort_after_deltas``, hang up after that many deltas."""
        result = Result()
        try:
            await asyncio.wait_for(self._call(raw, result, abort_after_deltas), CALL_TIMEOUT_S)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            result.error = type(exc).__name__
            result.end = time.perf_counter()
            self.close()
        return result

    async def _call(self, raw: bytes, result: Result, abort_after: int) -> None:
        reader, writer = await self._open()
        result.start = time.perf_counter()
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        result.headers_at = time.perf_counter()
        result.status = int(head[9:12])
        lower = head.lower()
        if b"transfer-encoding: chunked" in lower:
            await self._chunked(reader, result, abort_after)
        else:
            length = 0
            at = lower.find(b"content-length:")
            if at >= 0:
                length = int(lower[at + 15 : lower.find(b"\r\n", at)])
            body = await reader.readexactly(length)
            result.body = body
            result.end = time.perf_counter()
            result.complete = result.status == 200
            if result.complete:
                result.deltas.append(result.end)
        if b"connection: close" in lower:
            self.close()

    async def _chunked(self, reader: asyncio.StreamReader, result: Result, abort_after: int) -> None:
        buffer = b""
        for _ in range(10_000_000):
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            buffer += (await reader.readexactly(size + 2))[:-2]
            if b"\r" in buffer:
                buffer = buffer.replace(b"\r\n", b"\n")
            now = time.perf_counter()
            for _ in range(100_000):
                cut = buffer.find(b"\n\n")
                if cut < 0:
                    break
                frame, buffer = buffer[:cut], buffer[cut + 2 :]
                if _is_delta(frame):
                    result.deltas.append(now)
                    if abort_after and len(result.deltas) >= abort_after:
                        result.aborted_at = time.perf_counter()
                        result.aborted_monotonic = time.monotonic()
                        self.close()
                        result.end = result.aborted_at
                        return
                elif _is_terminal(frame):
                    result.complete = result.status == 200
        result.end = time.perf_counter()


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (``p`` in 0..100); ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(value: float | None) -> float | None:
    """Seconds → milliseconds, 3 decimals."""
    return None if value is None else round(value * 1000, 3)


def median(values: Sequence[float]) -> float | None:
    """The median, ``None`` for no values."""
    return statistics.median(values) if values else None


async def closed_loop(
    target: Target, raw: bytes, concurrency: int, seconds: float
) -> dict[str, float | int | None]:
    """``concurrency`` workers, each sending ``raw`` back to back on its own connection, for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    connections = [Connection(target) for _ in range(concurrency)]
    stop_at = time.perf_counter() + seconds

    async def worker(connection: Connection) -> None:
        nonlocal errors
        for _ in range(10_000_000):
            if time.perf_counter() >= stop_at:
                return
            result = await connection.call(raw)
            if result.complete:
                latencies.append(result.latency)
            else:
                errors += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in connections))
    elapsed = time.perf_counter() - began
    for connection in connections:
        connection.close()
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": ms(percentile(latencies, 50)),
        "p99_ms": ms(percentile(latencies, 99)),
    }
