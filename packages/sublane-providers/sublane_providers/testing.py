"""The shared contract test kit: every adapter's tests subclass :class:`AdapterContract`.

The kit runs the adapter against a stand-in for its upstream — the upstream simulator
(``sublane-sim``, a test dependency) by default, or one the provider's own tests bring (a
:class:`ContractUpstream`, as the test-only fourth provider does) — and checks what the gateway
relies on: credential files parse to an identity, a normal stream yields a
first delta, usage and success, broken streams never look like success, error answers are
classified alike across providers, refresh separates permanent from transient failures, and quota
and model catalogues can be read. A new adapter passes the kit or is not done (STYLE.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar, Protocol

import httpx
import pytest

from sublane_core.sse import SseFramer, parse_event
from sublane_providers._adapter import ProviderAdapter, stream_request
from sublane_providers._http1 import Http1Pool
from sublane_providers._refresh import RefreshFailed
from sublane_providers._types import FailureKind, Outcome, StreamState
from sublane_providers._upstream import UpstreamError, UpstreamRequest, read_all
from sublane_sim import Behaviour, RefreshOutcome, SimAccount, Simulator


def as_httpx(http: httpx.AsyncClient, request: UpstreamRequest) -> httpx.Request:
    """An adapter's request as ``http`` would send it (for tests reading answers with httpx)."""
    return http.build_request(
        request.method, request.url, headers=dict(request.headers), content=request.content
    )


def model_pool(timeout_s: float = 10.0) -> Http1Pool:
    """A pool sending model requests the way the gateway does (its own small pool for a test)."""
    return Http1Pool(
        ssl.create_default_context(),
        limit=64,
        keepalive_s=5.0,
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
    )


class UpstreamAccount(Protocol):
    """An account on a contract upstream: its handle and the credential file it hands out."""

    @property
    def id(self) -> str: ...

    @property
    def credentials(self) -> dict[str, Any]: ...


class ContractUpstream(Protocol):
    """What the contract needs of an upstream stand-in: accounts, and faults scripted per account
    for the next call (a model call, or a token refresh)."""

    def new_account(self) -> UpstreamAccount:
        """A fresh account with a refreshable credential file."""
        ...

    def fail_next(self, account: UpstreamAccount, status: int, retry_after: str | None = None) -> None:
        """The next model call answers ``status`` (with ``Retry-After`` when given)."""
        ...

    def cut_next(self, account: UpstreamAccount, after_events: int) -> None:
        """The next stream ends (EOF) after ``after_events`` events, without its ending."""
        ...

    def overload_next(self, account: UpstreamAccount) -> None:
        """The next stream carries an in-stream overload error instead of an answer."""
        ...

    def revoke_refresh_token(self, account: UpstreamAccount) -> None:
        """The account's refresh token is dead from now on."""
        ...

    def fail_next_refresh(
        self, account: UpstreamAccount, status: int, retry_after: str | None = None
    ) -> None:
        """The next token refresh answers ``status``."""
        ...


class SimUpstream:
    """The upstream simulator as a :class:`ContractUpstream` for one of the providers it plays."""

    def __init__(self, sim: Simulator, provider: str) -> None:
        self._sim = sim
        self._provider = provider

    def new_account(self) -> SimAccount:
        return self._sim.create_account(self._provider)  # type: ignore[arg-type]

    def fail_next(self, account: UpstreamAccount, status: int, retry_after: str | None = None) -> None:
        self._sim.script(account.id, Behaviour.error(status, retry_after=retry_after))

    def cut_next(self, account: UpstreamAccount, after_events: int) -> None:
        self._sim.script(account.id, Behaviour.cut(after_events, cut_mode="eof"))

    def overload_next(self, account: UpstreamAccount) -> None:
        self._sim.script(account.id, Behaviour.overload(1))

    def revoke_refresh_token(self, account: UpstreamAccount) -> None:
        self._sim.revoke_refresh_token(account.id)

    def fail_next_refresh(
        self, account: UpstreamAccount, status: int, retry_after: str | None = None
    ) -> None:
        self._sim.script_refresh(
            account.id, RefreshOutcome(kind="error", status=status, retry_after=retry_after)
        )


class AdapterContract(ABC):
    """Subclass with ``provider``, ``model``, :meth:`make_adapter` and :meth:`native_body`.

    The upstream is the simulator playing ``provider`` unless the subclass overrides the fixtures
    ``upstream`` (its :class:`ContractUpstream`) and ``stand_in`` (what ``make_adapter`` gets)."""

    provider: ClassVar[str]
    model: ClassVar[str]

    @abstractmethod
    def make_adapter(self, sim: Any, http: httpx.AsyncClient) -> ProviderAdapter:
        """The adapter under test, pointed at the ``stand_in`` fixture's value (the simulator by
        default)."""

    @abstractmethod
    def native_body(self) -> dict[str, Any]:
        """A minimal inference body in the provider's native protocol, for ``model``."""

    # -- fixtures -----------------------------------------------------------------------------------

    @pytest.fixture
    async def http(self) -> AsyncIterator[httpx.AsyncClient]:
        async with httpx.AsyncClient(timeout=10) as client:
            yield client

    @pytest.fixture
    def upstream(self, sim: Simulator) -> ContractUpstream:
        """The upstream stand-in: the simulator playing this provider (override to bring another)."""
        return SimUpstream(sim, self.provider)

    @pytest.fixture
    def stand_in(self, sim: Simulator) -> Any:
        """What :meth:`make_adapter` points the adapter at: the simulator (its URLs) by default; a
        subclass that brings its own upstream overrides this with it, as it does ``upstream``."""
        return sim

    @pytest.fixture
    def adapter(self, stand_in: Any, http: httpx.AsyncClient) -> ProviderAdapter:
        return self.make_adapter(stand_in, http)

    @pytest.fixture
    def account(self, upstream: ContractUpstream) -> UpstreamAccount:
        return upstream.new_account()

    @pytest.fixture
    def bundle(self, adapter: ProviderAdapter, account: UpstreamAccount) -> dict[str, Any]:
        return dict(adapter.parse_credentials(account.credentials).bundle)

    # -- helpers ------------------------------------------------------------------------------------

    async def stream(
        self, adapter: ProviderAdapter, http: httpx.AsyncClient, bundle: dict[str, Any]
    ) -> tuple[int, StreamState, bytes]:
        """Send one streaming request; ``(status, observed state, error body)``."""
        request = stream_request(adapter, bundle, self.native_body(), {}, bound=False)
        observer = adapter.new_observer()
        framer = SseFramer()
        pool = model_pool()
        try:
            response = await pool.send(request)
            if response.status_code >= 300:
                return response.status_code, observer.state, await read_all(response)
            try:
                while chunk := await response.read():
                    for block in framer.feed(chunk):
                        event = parse_event(block)
                        observer.observe(event.name, event.data)
            except UpstreamError:
                pass  # a cut connection: the state shows what arrived
            finally:
                await response.aclose()
            return response.status_code, observer.state, b""
        finally:
            await pool.aclose()

    # -- the contract -------------------------------------------------------------------------------

    def test_contract_parses_its_credential_file(
        self, adapter: ProviderAdapter, account: UpstreamAccount
    ) -> None:
        imported = adapter.parse_credentials(account.credentials)
        assert imported.provider == self.provider
        assert imported.bundle.get("refresh_token")
        assert imported.identity.email or imported.identity.plan or imported.identity.subject

    async def test_contract_normal_stream_gives_first_delta_usage_and_success(
        self, adapter: ProviderAdapter, http: httpx.AsyncClient, bundle: dict[str, Any]
    ) -> None:
        status, state, _ = await self.stream(adapter, http, bundle)
        assert status == 200
        assert state.outcome is Outcome.SUCCESS
        assert state.first_delta is not None
        assert state.usage is not None and (state.usage.input_tokens or 0) > 0

    async def test_contract_cut_stream_is_never_success(
        self, adapter: ProviderAdapter, http: httpx.AsyncClient, bundle: dict[str, Any],
        upstream: ContractUpstream, account: UpstreamAccount,
    ) -> None:  # fmt: skip
        upstream.cut_next(account, 2)
        _, state, _ = await self.stream(adapter, http, bundle)
        assert state.outcome is None or state.outcome is Outcome.ERROR

    async def test_contract_in_stream_overload_is_an_error(
        self, adapter: ProviderAdapter, http: httpx.AsyncClient, bundle: dict[str, Any],
        upstream: ContractUpstream, account: UpstreamAccount,
    ) -> None:  # fmt: skip
        upstream.overload_next(account)
        status, state, _ = await self.stream(adapter, http, bundle)
        assert status == 200
        assert state.outcome is Outcome.ERROR and state.error_code

    @pytest.mark.parametrize(
        ("status", "kind"),
        [
            (401, FailureKind.UNAUTHORIZED),
            (403, FailureKind.FORBIDDEN),
            (503, FailureKind.TRANSIENT),
            (500, FailureKind.TRANSIENT),
            (400, FailureKind.CLIENT_ERROR),
        ],
    )
    async def test_contract_error_answers_are_classified(
        self, adapter: ProviderAdapter, http: httpx.AsyncClient, bundle: dict[str, Any],
        upstream: ContractUpstream, account: UpstreamAccount, status: int, kind: FailureKind,
    ) -> None:  # fmt: skip
        upstream.fail_next(account, status)
        got, _, body = await self.stream(adapter, http, bundle)
        assert got == status
        failure = adapter.classify_failure(status, {}, body, 0.0)
        assert failure.kind is kind
        assert failure.retryable is (status in (500, 503))

    async def test_contract_429_is_a_rate_limit_with_its_retry_after(
        self, adapter: ProviderAdapter, http: httpx.AsyncClient, bundle: dict[str, Any],
        upstream: ContractUpstream, account: UpstreamAccount,
    ) -> None:  # fmt: skip
        upstream.fail_next(account, 429, retry_after="17")
        status, _, body = await self.stream(adapter, http, bundle)
        assert status == 429
        failure = adapter.classify_failure(429, {"retry-after": "17"}, body, 0.0)
        assert failure.kind in (
            FailureKind.RATE_LIMITED,
            FailureKind.QUOTA_EXHAUSTED,
            FailureKind.MODEL_RATE_LIMITED,
        )
        assert failure.retry_after == 17

    async def test_contract_refresh_gives_fresh_credentials(
        self, adapter: ProviderAdapter, bundle: dict[str, Any]
    ) -> None:
        refreshed = await adapter.refresh(bundle)
        assert refreshed.bundle["access_token"] != bundle["access_token"]
        assert refreshed.bundle.get("refresh_token")

    async def test_contract_dead_refresh_token_is_permanent(
        self,
        adapter: ProviderAdapter,
        bundle: dict[str, Any],
        upstream: ContractUpstream,
        account: UpstreamAccount,
    ) -> None:
        upstream.revoke_refresh_token(account)
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert failed.value.permanent

    async def test_contract_transient_refresh_failure_is_not_permanent(
        self,
        adapter: ProviderAdapter,
        bundle: dict[str, Any],
        upstream: ContractUpstream,
        account: UpstreamAccount,
    ) -> None:
        upstream.fail_next_refresh(account, 500)
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert not failed.value.permanent

    async def test_contract_refresh_retry_after_is_kept(
        self,
        adapter: ProviderAdapter,
        bundle: dict[str, Any],
        upstream: ContractUpstream,
        account: UpstreamAccount,
    ) -> None:
        upstream.fail_next_refresh(account, 429, retry_after="600")
        with pytest.raises(RefreshFailed) as failed:
            await adapter.refresh(bundle)
        assert not failed.value.permanent and failed.value.retry_after == 600

    async def test_contract_reads_quota(self, adapter: ProviderAdapter, bundle: dict[str, Any]) -> None:
        _plan, windows = await adapter.read_quota(bundle, 0.0)
        assert windows
        assert any(window.main for window in windows)

    async def test_contract_lists_models(self, adapter: ProviderAdapter, bundle: dict[str, Any]) -> None:
        models = await adapter.list_models(bundle)
        assert self.model in models


# -- loopback HTTP, for the transport's tests ----------------------------------------------------


async def read_http_request(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 request as a loopback server reads it: the head and its Content-Length body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + (await reader.readexactly(length) if length else b"")


async def close_quietly(writer: asyncio.StreamWriter) -> None:
    """Close a loopback server's side of a connection; the client may have gone first."""
    writer.close()
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        await writer.wait_closed()


StreamHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving(handler: StreamHandler, tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """A loopback server on a free port running ``handler`` per connection; yields its port. On exit
    every connection it accepted is closed and its handler finished, so no socket outlives a test."""
    tasks: set[asyncio.Task[None]] = set()
    writers: list[asyncio.StreamWriter] = []

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        writers.append(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            await handler(reader, writer)

    server = await asyncio.start_server(tracked, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in writers:
            if not writer.transport.is_closing():  # a closed one has let go of its loop already
                writer.transport.abort()
        await server.wait_closed()
        await asyncio.sleep(0)  # let the aborted transports finish closing
