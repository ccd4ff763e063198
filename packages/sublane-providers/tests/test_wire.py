"""The model path's cheap httpx types (``_wire.py``): a built request is the one httpx's client would
build and its wire head the bytes the pool would write for that one; a request changed after it was
built is sent as changed; a pool response behaves as httpx's for everything callers read."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sublane_providers._http1 import Http1Pool, _head
from sublane_providers._transport import RequestBuilder
from sublane_providers._wire import ModelRequest, ModelResponse, headers_of_parsed
from sublane_providers.testing import read_http_request, serving

URLS = (
    "https://chatgpt.com/backend-api/codex/responses",
    "http://127.0.0.1:8/v1internal:streamGenerateContent?alt=sse",
    "https://api.anthropic.com:443/v1/messages?beta=true",
    "https://bücher.example:8443/v1/x",
    "http://[::1]:9/v1/y",
)
# Names that collide with httpx's defaults, with what httpx adds, and ordinary ones.
NAMES = st.sampled_from(
    ["accept", "user-agent", "connection", "accept-encoding", "host", "content-length",
     "transfer-encoding", "authorization", "originator", "x-codex-turn", "anthropic-beta"]
) | st.from_regex(r"\A[a-z][a-z0-9-]{0,12}\Z")  # fmt: skip
VALUES = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\x7f"), max_size=20)


_CLIENT = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=30.0))  # never sends: no connections


def _same(ours: httpx.Request, theirs: httpx.Request) -> None:
    assert (ours.method, ours.url, ours.headers.raw, ours.content, ours.extensions) == (
        theirs.method, theirs.url, theirs.headers.raw, theirs.content, theirs.extensions
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    url=st.sampled_from(URLS),
    headers=st.dictionaries(NAMES, VALUES, max_size=8),
    content=st.binary(max_size=16),
)
def test_a_built_request_and_its_head_are_what_httpx_would_build_and_send(
    url: str, headers: dict[str, str], content: bytes
) -> None:
    client, builder = _CLIENT, RequestBuilder(_CLIENT)
    try:
        theirs = client.build_request("POST", url, content=content, headers=headers)
    except UnicodeEncodeError:  # httpx refuses what is not ASCII: so do we, when building
        with pytest.raises(UnicodeEncodeError):
            builder.build("POST", url, content=content, headers=headers)
        return
    ours = builder.build("POST", url, content=content, headers=headers)
    assert isinstance(ours, ModelRequest) is bool(content)  # an empty body takes httpx's way
    if isinstance(ours, ModelRequest):
        head = ours.wire_head()
        assert head == _head(theirs, absolute=False, proxy=None)
        assert ours.origin == (theirs.url.scheme, theirs.url.raw_host.decode(), ours.url.port or (
            443 if theirs.url.scheme == "https" else 80))  # fmt: skip
    _same(ours, theirs)


RAW_NAMES = st.binary(min_size=1, max_size=12) | st.sampled_from([b"Content-Type", b"X-Codex-Plan-Type"])


@given(raw=st.lists(st.tuples(RAW_NAMES, st.binary(max_size=16)), max_size=10))
def test_response_headers_of_the_parser_are_what_httpx_makes_of_them(raw: list[tuple[bytes, bytes]]) -> None:
    ours, theirs = headers_of_parsed([(name, name.lower(), value) for name, value in raw]), httpx.Headers(raw)
    assert ours.raw == theirs.raw
    assert ours.multi_items() == theirs.multi_items()
    assert ours == theirs
    for name, _ in raw:
        text = name.decode("latin-1")
        assert ours.get_list(text) == theirs.get_list(text)
    assert ours.encoding == theirs.encoding


def test_names_not_in_lower_case_and_httpx_headers_take_httpx_way() -> None:
    client = httpx.AsyncClient()
    builder = RequestBuilder(client)
    url = URLS[0]
    for headers in ({"Accept": "a", "x-b": "b"}, httpx.Headers({"accept": "a"})):
        ours = builder.build("POST", url, content=b"{}", headers=headers)
        assert not isinstance(ours, ModelRequest)
        _same(ours, client.build_request("POST", url, content=b"{}", headers=headers))


def test_the_client_default_headers_are_read_again_when_replaced() -> None:
    client = httpx.AsyncClient()
    builder = RequestBuilder(client)
    builder.build("POST", URLS[0], content=b"{}", headers={})
    client.headers = {"user-agent": "sublane"}
    ours = builder.build("POST", URLS[0], content=b"{}", headers={"x-a": "1"})
    _same(ours, client.build_request("POST", URLS[0], content=b"{}", headers={"x-a": "1"}))


def test_a_request_changed_after_it_was_built_has_no_head_of_its_own() -> None:
    builder = RequestBuilder(httpx.AsyncClient())
    request = builder.build("POST", URLS[0], content=b"{}", headers={"authorization": "Bearer a"})
    assert isinstance(request, ModelRequest) and request.wire_head() is not None
    request.headers["authorization"] = "Bearer b"  # touched: the pool writes the head from it
    assert request.wire_head() is None
    moved = builder.build("POST", URLS[0], content=b"{}", headers={})
    assert isinstance(moved, ModelRequest)
    moved.url = httpx.URL(URLS[2])
    assert moved.wire_head() is None


@contextlib.asynccontextmanager
async def _echoing() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A loopback upstream answering each request with a small body; the requests it read."""
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            seen.append(await read_http_request(reader))
            writer.write(b"HTTP/1.1 201 Made\r\nX-Quota: 7\r\ncontent-length: 5\r\n\r\nhello")
            await writer.drain()

    async with serving(handler) as port:
        yield port, seen


def _pool() -> Http1Pool:
    return Http1Pool(ssl.create_default_context(), limit=4, keepalive_s=30.0, timeout=httpx.Timeout(2.0))


async def test_a_changed_request_is_sent_as_changed_and_an_unchanged_one_as_built() -> None:
    pool = _pool()
    builder = RequestBuilder(httpx.AsyncClient())
    async with _echoing() as (port, seen):
        url = f"http://127.0.0.1:{port}/v1/x"
        request = builder.build("POST", url, content=b"{}", headers={"authorization": "Bearer a"})
        response = await pool.send(request)
        assert await response.aread() == b"hello"
        request = builder.build("POST", url, content=b"{}", headers={"authorization": "Bearer a"})
        request.headers["authorization"] = "Bearer b"
        response = await pool.send(request)
        assert await response.aread() == b"hello"
        elsewhere = builder.build("POST", "http://127.0.0.1:1/v1/y", content=b"{}", headers={})
        elsewhere.url = httpx.URL(url)  # moved after it was built: it goes where it now points
        response = await pool.send(elsewhere)
        assert await response.aread() == b"hello"
    await pool.aclose()
    # It reached the new origin, with the headers it has (like httpx's, its Host is not rewritten).
    assert seen[2].startswith(b"POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1:1\r\n")
    assert b"authorization: Bearer a\r\n" in seen[0] and seen[0].endswith(b"\r\n\r\n{}")
    assert b"authorization: Bearer b\r\n" in seen[1] and b"Bearer a" not in seen[1]


async def test_a_pool_response_reads_like_an_httpx_one() -> None:
    """Status, reason, headers, the body once (then StreamConsumed), closed after its end."""
    pool = _pool()
    async with _echoing() as (port, _):
        request = httpx.Request("POST", f"http://127.0.0.1:{port}/v1/x", content=b"{}")
        response = await pool.send(request)
        assert isinstance(response, ModelResponse)
        assert (response.status_code, response.reason_phrase, response.http_version) == (
            201, "Made", "HTTP/1.1"
        )  # fmt: skip
        assert response.headers["x-quota"] == "7" and response.headers.raw[0] == (b"X-Quota", b"7")
        assert response.request is request and response.url == request.url
        assert b"".join([chunk async for chunk in response.aiter_raw()]) == b"hello"
        assert response.is_closed and response.num_bytes_downloaded == 5
        with pytest.raises(httpx.StreamConsumed):
            await anext(response.aiter_raw())
        second = await pool.send(request)  # the connection went back to the pool
        await second.aclose()
        with pytest.raises(httpx.StreamClosed):
            await anext(second.aiter_raw())
        third = await pool.send(request)
        assert [chunk async for chunk in third.aiter_raw(chunk_size=2)] == [b"he", b"ll", b"o"]
    await pool.aclose()


async def test_an_answer_given_back_unread_is_not_read_by_the_next_exchange() -> None:
    """A body that arrived whole but was not read stays with its own exchange: the connection is
    reused, and the next answer on it starts with its own bytes."""
    pool = _pool()
    async with _echoing() as (port, seen):
        request = httpx.Request("POST", f"http://127.0.0.1:{port}/v1/x", content=b"{}")
        unread = await pool.send(request)
        await asyncio.sleep(0.05)  # the whole answer has arrived
        await unread.aclose()
        response = await pool.send(request)
        assert await response.aread() == b"hello"
    await pool.aclose()
    assert len(seen) == 2
