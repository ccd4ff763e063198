"""Server-sent events on the wire, read and written: SubLane's one SSE module.

Reading: cut a byte stream into whole events without copying them twice. SubLane relays upstream
events byte for byte; it only needs to know where one event ends (so that heartbeats and its own
frames go between events) and, for a few events, the name and data. Writing: the frames SubLane
makes itself (translated streams, re-framed ones, its own endings), one function for all.

Substrings are looked for with ``bytes.find``, not ``in``: on Python 3.11 ``needle in data`` first
tries the needle as an integer and raises, formats and clears a ``TypeError`` each time (twice the
time of ``find``; callgrind, issue #19). The gateway's SSE and body checks do the same.
"""

from __future__ import annotations

import re
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
        if buffer.find(b"\r") == -1:  # the usual stream, lines ending in LF: one separator to look for
            *complete, self._buffer = buffer.split(b"\n\n")
            return [event + b"\n\n" for event in complete]
        events, start = _cut_at_any_separator(buffer)
        self._buffer = buffer[start:]
        return events

    def cut(self, chunk: bytes) -> bytes:
        """The complete events now available as one piece (``b""``: none yet), the same bytes that
        :meth:`feed` would return as a list: no copy per event (issue #19)."""
        buffer = self._buffer + chunk if self._buffer else chunk
        end = _end_of_lf_events(buffer) if buffer.find(b"\r") == -1 else _cut_at_any_separator(buffer)[1]
        if end == len(buffer):
            self._buffer = b""
            return buffer
        self._buffer = buffer[end:]
        return buffer[:end]

    def rest(self) -> bytes:
        """Bytes of an unfinished event left when the stream ended."""
        return self._buffer


def _end_of_lf_events(buffer: bytes) -> int:
    """Where the last complete event ends when lines end in LF (``0``: none), as ``split`` cuts:
    in a run of blank lines the separators pair up from the run's start."""
    last = buffer.rfind(b"\n\n")
    if last == -1:
        return 0
    start = last
    while start and buffer[start - 1] == 10:  # a longer run of LFs (rare)
        start -= 1
    return start + (last + 2 - start) // 2 * 2


def blocks_of(events: bytes) -> list[bytes]:
    """The event blocks (separators included) of complete events, as :meth:`SseFramer.cut` gave them."""
    if events.find(b"\r") == -1:
        return [event + b"\n\n" for event in events.split(b"\n\n")[:-1]]
    return _cut_at_any_separator(events)[0]


def _cut_at_any_separator(buffer: bytes) -> tuple[list[bytes], int]:
    """The complete events of a buffer where lines may end in CR, CRLF or LF, and where they end."""
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
            return events, start
        events.append(buffer[start : end + cut])
        start = end + cut


@dataclass(frozen=True, slots=True)
class SseEvent:
    """The fields of one event block."""

    name: str | None
    data: str | None


def parse_event(block: bytes) -> SseEvent:
    """The ``event:`` name and joined ``data:`` lines of a block; comments are ignored.

    Lines end at CR, LF or CRLF, as SSE says: not at the other line breaks ``str.splitlines`` knows
    (U+2028, form feed, …), which a JSON string may hold unescaped.
    """
    name, data = event_fields(block)
    return SseEvent(name=name, data=data.decode("utf-8", "replace") if data is not None else None)


def event_fields(block: bytes) -> tuple[str | None, bytes | None]:
    """:func:`parse_event`'s name and data, the data left in its UTF-8 bytes (decoded only if
    wanted, straight from the bytes: ``json_loads_text``). The usual one-name, one-data-line block
    takes a path without a loop (issue #19)."""
    if block.startswith(b"event: ") and block.endswith(b"\n\n") and block.find(b"\r") == -1:
        head, found, value = block[7:-2].partition(b"\ndata: ")
        if found and head.find(b"\n") == -1 and value.find(b"\n") == -1:
            return head.decode("utf-8", "replace"), value
    name: str | None = None
    data: list[bytes] = []
    lines = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if block.find(b"\r") != -1 else block
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
    return name, b"\n".join(data) if data else None


def encode_event(data: str, name: str | None = None) -> bytes:
    """One SSE event block for ``data`` (a single line of JSON)."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {data}\n\n".encode()


def frame(data: bytes, name: bytes | None = None, *, crlf: bool = False) -> bytes:
    """One SSE event block for ``data`` already in bytes (a single line: compact JSON), named when
    ``name`` is given; ``crlf`` ends lines with CRLF (what Google's streams send), else LF."""
    end = b"\r\n" if crlf else b"\n"
    head = b"event: " + name + end if name is not None else b""
    return head + b"data: " + data + end + end


# The usual event: one name line, NAME without blanks around it (as ``bytes.strip`` reads blanks),
# and one data line. Readers of a whole piece of events match it first (one C call an event instead
# of half a dozen finds and slices, issue #19) and give any other block to :func:`event_fields`.
USUAL_EVENT = re.compile(rb"event: ([^\s](?:[^\n]*[^\s])?)\ndata: ([^\n]*)\n\n")
_NAMES: dict[bytes, str] = {}  # an upstream sends a few dozen names; bounded for one that makes them up
_NAMES_SIZE = 512


def usual_event_name(raw: bytes) -> str:
    """The name :data:`USUAL_EVENT` matched (its first group), decoded once per name."""
    name = _NAMES.get(raw)
    if name is None:
        if len(_NAMES) >= _NAMES_SIZE:
            _NAMES.clear()
        name = _NAMES[raw] = raw.decode("utf-8", "replace")
    return name
