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
        if b"\r" not in buffer:  # the usual stream, lines ending in LF: one separator to look for
            *complete, self._buffer = buffer.split(b"\n\n")
            return [event + b"\n\n" for event in complete]
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
    """The ``event:`` name and joined ``data:`` lines of a block; comments are ignored.

    Lines end at CR, LF or CRLF, as SSE says: not at the other line breaks ``str.splitlines`` knows
    (U+2028, form feed, …), which a JSON string may hold unescaped. The usual one-name, one-data-line
    block takes a path without a loop (issue #19).
    """
    if block.startswith(b"event: ") and block.endswith(b"\n\n") and b"\r" not in block:
        head, found, value = block[7:-2].partition(b"\ndata: ")
        if found and b"\n" not in head and b"\n" not in value:
            return SseEvent(name=head.decode("utf-8", "replace"), data=value.decode("utf-8", "replace"))
    name: str | None = None
    data: list[bytes] = []
    lines = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in block else block
    for line in lines.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        field_name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field_name == b"event":
            name = value.decode("utf-8", "replace")
        elif field_name == b"data":
            data.append(value)
    return SseEvent(name=name, data=b"\n".join(data).decode("utf-8", "replace") if data else None)


def encode_event(data: str, name: str | None = None) -> bytes:
    """One SSE event block for ``data`` (a single line of JSON)."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {data}\n\n".encode()
