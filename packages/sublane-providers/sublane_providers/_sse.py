"""Server-sent events on the wire: cut a byte stream into whole events without copying them twice.

SubLane relays upstream events byte for byte; it only needs to know where one event ends (so that
heartbeats and its own frames go between events) and, for a few events, the name and data.
"""

from __future__ import annotations

from dataclasses import dataclass

_SEPARATORS = (b"\n\n", b"\r\n\r\n", b"\r\r")


class SseFramer:
    """Feeds on raw chunks and returns complete event blocks (separator included), in order."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """Complete events now available; a partial event waits for the next chunk."""
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[bytes] = []
        start = 0
        while True:
            end = -1
            cut = 0
            for separator in _SEPARATORS:
                index = buffer.find(separator, start)
                if index != -1 and (end == -1 or index < end):
                    end, cut = index, len(separator)
            if end == -1:
                break
            events.append(buffer[start : end + cut])
            start = end + cut
        self._buffer = buffer[start:]
        return events

    def rest(self) -> bytes:
        """Bytes of an unfinished event left when the stream ended."""
        return self._buffer


@dataclass(frozen=True, slots=True)
class SseEvent:
    """The fields of one event block."""

    name: str | None
    data: str | None


def parse_event(block: bytes) -> SseEvent:
    """The ``event:`` name and joined ``data:`` lines of a block; comments are ignored."""
    name: str | None = None
    data: list[str] = []
    for raw_line in block.decode("utf-8", errors="replace").splitlines():
        if not raw_line or raw_line.startswith(":"):
            continue
        field_name, _, value = raw_line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field_name == "event":
            name = value
        elif field_name == "data":
            data.append(value)
    return SseEvent(name=name, data="\n".join(data) if data else None)


def encode_event(data: str, name: str | None = None) -> bytes:
    """One SSE event block for ``data`` (a single line of JSON)."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {data}\n\n".encode()
