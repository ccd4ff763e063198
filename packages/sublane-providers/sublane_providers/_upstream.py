"""The upstream client's own small interface: what a provider builds and what the pipeline reads.

A model call goes upstream as an :class:`UpstreamRequest` (a plain value a provider builds: method,
URL, headers, body) and comes back as an :class:`UpstreamResponse` (status, headers, a body read
chunk by chunk with a bound on each wait). Failures are this module's errors, whatever library
sends: :class:`UpstreamConnectError` (nothing was sent; another host may serve it),
:class:`UpstreamTimeout` and :class:`UpstreamCut`. These are SubLane's types, not a library's: a
sender — today the keep-alive pool of ``_http1`` — implements them through its library's public
API, so a provider and the pipeline never depend on which library carries the bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from sublane_providers._egress import EgressFailed

MAX_ERROR_BODY = 64 * 1024


@dataclass(frozen=True, slots=True)
class UpstreamRequest:
    """One model request: ``headers`` by lower-case name, ``content`` the whole body.

    The sender adds ``host`` and ``content-length`` when they are missing, and asks for an
    uncompressed answer (``accept-encoding: identity``) unless the provider says otherwise:
    answers are relayed byte for byte.
    """

    method: str
    url: str
    headers: Mapping[str, str] = field(repr=False)  # the credential travels here: never shown
    content: bytes = field(repr=False)

    def to(self, url: str, headers: Mapping[str, str] | None = None) -> UpstreamRequest:
        """The same request to another URL (another host of the provider)."""
        return replace(self, url=url, headers=self.headers if headers is None else headers)


class UpstreamError(Exception):
    """The upstream could not be reached, or its answer broke off."""


class UpstreamConnectError(UpstreamError):
    """No connection: nothing of the request reached the upstream (another host may serve it)."""


class UpstreamProxyError(UpstreamConnectError, EgressFailed):
    """The egress proxy could not be reached or refused the tunnel."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not connect or answer within the sender's timeout."""


class UpstreamCut(UpstreamError):
    """The answer broke off (closed, cut or malformed) before its end."""


class ResponseHeaders(Mapping[str, str]):
    """An answer's headers by lower-case name, repeated fields joined with ``", "``.

    Built from the parser's ``(raw name, lower-case name, value)`` triples, kept in order in
    :attr:`triples`; the mapping is made on first lookup (most answers are looked at for a few
    names, or not at all).
    """

    __slots__ = ("_map", "triples")

    def __init__(self, triples: list[tuple[bytes, bytes, bytes]]) -> None:
        self.triples = triples
        self._map: dict[str, str] | None = None

    def _mapping(self) -> dict[str, str]:
        mapping = self._map
        if mapping is None:
            mapping = {}
            for _, lower, value in self.triples:
                name, text = header_text(lower), header_text(value)
                mapping[name] = f"{mapping[name]}, {text}" if name in mapping else text
            self._map = mapping
        return mapping

    def __getitem__(self, name: str) -> str:
        return self._mapping()[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._mapping()

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def __repr__(self) -> str:
        return f"ResponseHeaders({list(self._mapping())!r})"


def header_text(value: bytes) -> str:
    """A header's bytes as text: ASCII (nearly all), else UTF-8, else Latin-1 (RFC 9110's obs-text)."""
    try:
        return value.decode("ascii")
    except UnicodeDecodeError:
        pass
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


@runtime_checkable
class UpstreamResponse(Protocol):
    """An answer whose head has arrived; its body is read as it comes."""

    status_code: int
    headers: ResponseHeaders

    async def read(self, within: float | None = None) -> bytes | None:
        """The bytes received since the last read, waiting for some if none; ``b""`` at the end,
        ``None`` when nothing came within ``within`` seconds (the body can still be read on).
        Raises :class:`UpstreamTimeout` or :class:`UpstreamCut`."""
        ...

    async def aclose(self) -> None:
        """Done with the answer, read or not (the connection goes back to its pool or closes)."""
        ...


class UpstreamSender(Protocol):
    """What sends model requests (the pipeline's one door to the network for them)."""

    async def send(self, request: UpstreamRequest) -> UpstreamResponse:
        """The answer's head; raises :class:`UpstreamError`."""
        ...

    async def aclose(self) -> None: ...


async def chunks_of(response: UpstreamResponse) -> AsyncIterator[bytes]:
    """The rest of the body, chunk by chunk."""
    read = response.read
    while data := await read():
        yield data


async def read_all(response: UpstreamResponse) -> bytes:
    """The whole body, then the response is closed."""
    try:
        return b"".join([chunk async for chunk in chunks_of(response)])
    finally:
        await response.aclose()


async def read_error_body(response: UpstreamResponse, limit: int = MAX_ERROR_BODY) -> bytes:
    """At most ``limit`` bytes of an error answer (what came before a cut), then the response is
    closed: an error body is read to classify it, never waited out past its end."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size < limit:
            chunk = await response.read()
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except UpstreamError:
        pass
    finally:
        await response.aclose()
    return b"".join(chunks)[:limit]
