"""httpx's request and response types for model calls, made without httpx's per-call work.

A model request is one POST with lower-case ``str`` headers and a body known in full; httpx's
``Request`` normalises every header three times over (about 70 µs a call on the bench machine).
:class:`ModelRequest` is an ``httpx.Request`` whose wire head — the request line and the headers,
in the order and with the bytes httpx would send — is written once from the header pairs, and whose
``headers`` are built from the same pairs only when someone asks for them. Touching ``headers``
(which may change them), ``url`` or ``method`` makes the pool write the head from the request again,
so a request changed after it was built is sent as it is.

:class:`ModelResponse` is an ``httpx.Response`` over the pool's body: its headers are parsed on
first use and its raw iteration reads the body directly (no re-chunking, no exception mapping: the
pool's body raises httpx's errors, with the request, itself).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from sublane_providers._http1 import Http1Body

Origin = tuple[str, str, int]  # (scheme, IDNA host, port): where the pool connects


class ModelRequest(httpx.Request):
    """An ``httpx.Request`` carrying its wire head; see the module's docstring."""

    origin: Origin
    _pairs: list[tuple[str, str]]
    _lazy_headers: httpx.Headers | None
    _head: bytes | None
    _head_url: httpx.URL
    _head_method: str

    @classmethod
    def of(
        cls,
        method: str,
        url: httpx.URL,
        origin: Origin,
        line: str,
        pairs: list[tuple[str, str]],
        content: bytes,
        extensions: dict[str, Any],
    ) -> ModelRequest:
        """``line``: the request line with its CRLF; ``pairs``: the headers, Host and
        Content-Length included, as they go on the wire."""
        self = cls.__new__(cls)
        self.method = self._head_method = method
        self.url = self._head_url = url
        self.origin = origin
        self.extensions = extensions
        self.stream = httpx.ByteStream(content)
        self._content = content
        self._pairs = pairs
        self._lazy_headers = None
        lines = "".join([f"{name}: {value}\r\n" for name, value in pairs])
        self._head = (line + lines + "\r\n").encode("ascii")  # httpx refuses the rest alike
        return self

    @property
    def headers(self) -> httpx.Headers:
        headers = self._lazy_headers
        if headers is None:
            raw = [(name.encode("ascii"), value.encode("ascii")) for name, value in self._pairs]
            headers = self._lazy_headers = httpx.Headers(raw)
            self._head = None  # the caller may change them: the pool writes the head from them
        return headers

    @headers.setter
    def headers(self, value: httpx.Headers) -> None:
        self._lazy_headers = value
        self._head = None

    def wire_head(self) -> bytes | None:
        """The head as built, while nothing it was made of may have changed (else ``None``)."""
        if self.url is self._head_url and self.method is self._head_method:
            return self._head
        return None


ParsedHeaders = list[tuple[bytes, bytes, bytes]]  # (raw name, lower-case name, value), in order


def headers_of_parsed(parsed: ParsedHeaders) -> httpx.Headers:
    """``httpx.Headers`` over the pool parser's ``(raw name, lower-case name, value)`` triples.

    httpx normalises every pair through two functions and three type checks; for ``bytes`` that
    only adds the lower-case name, which the parser's callback adds as it stores the header, so the
    triples are httpx's own list (an answer's 14 headers: 4.9 → 3.0 µs on the bench machine, then
    no pass at all). Its equality with httpx's own is tested (``test_wire``), so an httpx that keeps
    its headers otherwise fails there. ``parsed`` is taken, not copied.
    """
    headers = httpx.Headers()
    headers._list = parsed
    return headers


class ModelResponse(httpx.Response):
    """An ``httpx.Response`` over one of the pool's bodies; see the module's docstring."""

    _raw_headers: ParsedHeaders
    _lazy_headers: httpx.Headers | None
    _body: Http1Body

    @classmethod
    def of(
        cls,
        status: int,
        raw_headers: ParsedHeaders,
        stream: Http1Body,
        request: httpx.Request,
        reason: bytes,
    ) -> ModelResponse:
        self = cls.__new__(cls)
        self.status_code = status
        self._raw_headers = raw_headers
        self._lazy_headers = None
        self._request = request
        self.next_request = None
        self.extensions = {"http_version": b"HTTP/1.1", "reason_phrase": reason}
        self.history = []
        self.is_closed = False
        self.is_stream_consumed = False
        self.default_encoding = "utf-8"
        self.stream = self._body = stream
        self._num_bytes_downloaded = 0
        return self

    @property
    def headers(self) -> httpx.Headers:
        headers = self._lazy_headers
        if headers is None:
            headers = self._lazy_headers = headers_of_parsed(self._raw_headers)
        return headers

    @headers.setter
    def headers(self, value: httpx.Headers) -> None:
        self._lazy_headers = value

    async def aiter_raw(self, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        body = self._body
        if chunk_size is not None or self.stream is not body:  # re-chunked, or another stream
            async for chunk in super().aiter_raw(chunk_size):
                yield chunk
            return
        if self.is_stream_consumed:
            raise httpx.StreamConsumed()
        if self.is_closed:
            raise httpx.StreamClosed()
        self.is_stream_consumed = True
        read = body.read
        while data := await read():
            self._num_bytes_downloaded += len(data)
            yield data
        await self.aclose()

    async def aclose(self) -> None:
        if self.stream is not self._body:
            await super().aclose()
        elif not self.is_closed:
            self.is_closed = True
            await self._body.aclose()
