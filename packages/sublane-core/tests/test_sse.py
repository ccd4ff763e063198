"""parse_event: the SSE fields of one block, lines cut at CR, LF and CRLF only."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sublane_core.sse import (
    USUAL_EVENT,
    SseEvent,
    SseFramer,
    blocks_of,
    event_fields,
    parse_event,
    usual_event_name,
)

_EXOTIC_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _reference(block: bytes) -> SseEvent:
    """The parser as it was before its fast path (str.splitlines), for blocks without exotic breaks."""
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


_PIECES = st.sampled_from(
    ["event", "data", "id", ":", ": ", " ", "\n", "\r", "\r\n", "x", "é", '{"a":1}', "\n\n", "\U0001f600"]
)
_BLOCKS = st.lists(_PIECES, max_size=16).map("".join).map(str.encode) | st.binary(max_size=24)


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(_BLOCKS)
def test_parse_event_reads_what_the_line_by_line_parser_reads(block: bytes) -> None:
    text = block.decode("utf-8", "replace")
    if not any(item in text for item in _EXOTIC_BREAKS):
        assert parse_event(block) == _reference(block)


def test_the_usual_block_and_its_variants() -> None:
    assert parse_event(b'event: response.completed\ndata: {"a":1}\n\n') == SseEvent(
        "response.completed", '{"a":1}'
    )
    assert parse_event(b"event:x\r\ndata:1\r\ndata: 2\r\n\r\n") == SseEvent("x", "1\n2")
    assert parse_event(b"data: [DONE]\n\n") == SseEvent(None, "[DONE]")
    assert parse_event(b": keep-alive\n\n") == SseEvent(None, None)
    assert parse_event(b"event: a\nid: 7\ndata: b\n\n") == SseEvent("a", "b")


def test_a_json_string_with_a_unicode_line_separator_stays_one_data_line() -> None:
    data = '{"text":"one\u2028two\u2029three\x0cfour\x85five"}'
    assert parse_event(f"event: delta\ndata: {data}\n\n".encode()) == SseEvent("delta", data)
    assert parse_event(f"id: 1\ndata: {data}\n\n".encode()) == SseEvent(None, data)


def _framed_by_every_separator(chunks: list[bytes]) -> list[bytes]:
    """The framer as it was before its LF-only fast path: every separator looked for everywhere."""
    separators = (b"\n\n", b"\r\n\r\n", b"\r\r")
    buffer = b""
    events: list[bytes] = []
    for chunk in chunks:
        buffer += chunk
        start = 0
        while True:
            found = [(buffer.find(s, start), len(s)) for s in separators]
            hits = [(index, cut) for index, cut in found if index != -1]
            if not hits:
                break
            end, cut = min(hits)
            events.append(buffer[start : end + cut])
            start = end + cut
        buffer = buffer[start:]
    return [*events, buffer]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.binary(max_size=12).map(lambda b: bytes(c for c in b if c in b"a:\n\r ") or b"\n"), max_size=12
    )
)
def test_the_framer_cuts_every_chunking_where_the_full_search_does(chunks: list[bytes]) -> None:
    """LF-only buffers take a split; any CR goes the full search: the events are the same."""
    framer = SseFramer()
    events: list[bytes] = []
    for chunk in chunks:
        events += framer.feed(chunk)
    assert [*events, framer.rest()] == _framed_by_every_separator(chunks)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.binary(max_size=12).map(lambda b: bytes(c for c in b if c in b"a:\n\r ") or b"\n"), max_size=12
    )
)
def test_cut_gives_the_bytes_of_the_events_feed_gives(chunks: list[bytes]) -> None:
    """One piece per chunk instead of a list (issue #19): the same events, the same rest."""
    by_list, by_piece = SseFramer(), SseFramer()
    for chunk in chunks:
        blocks = by_list.feed(chunk)
        piece = by_piece.cut(chunk)
        assert piece == b"".join(blocks)
        assert blocks_of(piece) == blocks
        assert by_piece.rest() == by_list.rest()


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(_BLOCKS)
def test_event_fields_are_parse_events_fields_with_the_data_in_bytes(block: bytes) -> None:
    name, data = event_fields(block)
    event = parse_event(block)
    assert name == event.name
    assert (data.decode("utf-8", "replace") if data is not None else None) == event.data


_NAME_BYTES = st.sampled_from([b" ", b"\t", b"a", b"response.completed", b"\xc3\xa9", b"\xff", b":", b"x y"])


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(
    name=st.lists(_NAME_BYTES, max_size=4).map(b"".join),
    data=st.lists(st.sampled_from([b"{}", b" ", b"data: ", b"\xff", b"x"]), max_size=4).map(b"".join),
)
def test_the_usual_event_reads_as_event_fields_reads_it(name: bytes, data: bytes) -> None:
    block = b"event: " + name + b"\ndata: " + data + b"\n\n"
    usual = USUAL_EVENT.match(block)
    if usual is None:  # not the usual shape: blanks around the name, or none
        assert name.strip() != name[:] or not name
        return
    assert usual.end() == len(block)
    assert (usual_event_name(usual[1]), usual[2]) == event_fields(block)
