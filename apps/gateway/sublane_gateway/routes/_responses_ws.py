"""``GET /v1/responses`` upgraded to a WebSocket: Codex's Responses-over-WebSocket (PROTOCOLS §1.6).

A client socket carries sequential turns (``response.create`` frames). Each turn is its own model
attempt: its own lease, request ID and record (HIST-4: ``request_id`` is added to the created,
completed and incomplete events and to gateway errors). Between turns the socket holds no slot
(ADM-6). Turns go to an upstream session (:meth:`~sublane_providers.ProviderAdapter.open_session`)
on the chosen account, served by adapters of the Responses protocol that offer sessions; the
upstream socket is kept for the next turn on the same account, because ``previous_response_id``
only resolves there.

A prewarm (``generate: false``) is forwarded to the conversation's account to warm its cache, but
it is not a model attempt: it is never recorded (HIST-1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

from fastapi import APIRouter
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from sublane_core import Outcome, SubLaneError, UpstreamOperation, WireProtocol, new_request_id, signals
from sublane_gateway.pipeline import (
    ClientRuntime,
    ModelCall,
    Principal,
    check_policy,
    client_runtime,
    observe_exhaustion,
    report_refusal,
    review_link,
    schedule,
    split_model,
)
from sublane_gateway.pipeline._hub_turn import HubTurnError, SocketHistory, run_hub_turn
from sublane_gateway.pipeline._level_suffix import resolve_level_suffix
from sublane_gateway.routes._bodies import parse_json_object
from sublane_gateway.routes._http import headers_by_name
from sublane_protocols import body_field_problem, read_intent
from sublane_protocols.responses import openai_error_body
from sublane_providers import (
    Credentials,
    FailureKind,
    ProviderAdapter,
    SessionClosed,
    SessionRefused,
    StreamObserver,
    UpstreamSession,
    UpstreamUnreachable,
)
from sublane_scheduler import AccountInfo, Grant

router = APIRouter(tags=["client: OpenAI Responses"])
_log = logging.getLogger("sublane.websocket")

_TYPE_PATTERN = re.compile(r'"type"\s*:\s*"([^"]+)"')
_TAGGED_EVENTS = frozenset({"response.created", "response.completed", "response.incomplete"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


class _TurnError(Exception):
    """A turn ended before reaching the upstream stream; tell the client with an error frame."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(code)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after
        self.headers = headers or {}


def _error_frame(error: _TurnError, request_id: str | None) -> str:
    body = openai_error_body(error.status, error.code, error.message)["error"]
    frame: dict[str, Any] = {"type": "error", "status": error.status, "error": body}
    if request_id:
        frame["request_id"] = request_id
    headers = dict(error.headers)  # e.g. X-Token-Budget-Id (TEAM-4), as an HTTP answer would carry
    if error.retry_after is not None:
        headers["retry-after"] = str(max(1, round(error.retry_after)))
    if headers:
        frame["headers"] = headers
    return json.dumps(frame, separators=(",", ":"))


def _frame_type(text: str) -> str | None:
    match = _TYPE_PATTERN.search(text, 0, 200)
    return match.group(1) if match else None


class _Upstream:
    """An upstream session on one account."""

    def __init__(
        self,
        account: AccountInfo,
        adapter: ProviderAdapter,
        session: UpstreamSession,
        credentials: Credentials,
    ) -> None:
        self.account = account
        self.adapter = adapter
        self.session = session
        self.credentials = credentials

    async def close(self) -> None:
        await self.session.close()


class ClientSocket:
    """One client WebSocket and its turns."""

    def __init__(self, runtime: ClientRuntime, websocket: WebSocket, principal: Principal) -> None:
        self.runtime = runtime
        self.websocket = websocket
        self.principal = principal
        self.headers = headers_by_name(websocket)
        self.upstream: _Upstream | None = None
        self.turn_running = False
        self.history = SocketHistory()  # the last translated turn, for previous_response_id

    # -- the frame loop -------------------------------------------------------------------------

    async def serve(self) -> None:
        inbox: asyncio.Queue[str | None] = asyncio.Queue()
        reader = asyncio.create_task(self._read(inbox))
        try:
            while True:
                text = await inbox.get()
                if text is None:
                    return
                turn = asyncio.create_task(self._turn(text))
                self.turn_running = True
                waiter = asyncio.create_task(reader_done(reader))
                done, _ = await asyncio.wait({turn, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if turn not in done:  # the client went away mid-turn
                    turn.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await turn
                    return
                # A frame accepted while the turn was finishing (WAIT-7) is the next turn: keep the flag.
                self.turn_running = not inbox.empty()
                turn.result()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            if self.upstream is not None:
                await self.upstream.close()

    async def _read(self, inbox: asyncio.Queue[str | None]) -> None:
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    await self._send_error(
                        _TurnError(400, "invalid_request", "Send JSON text frames."), None, ends_turn=False
                    )
                    continue
                if self.turn_running:
                    if _frame_type(text) in ("response.processed", "response.append"):
                        continue  # acknowledgements; nothing to do
                    await self._send_error(
                        _TurnError(409, "turn_in_progress", "A response is still running on this socket."),
                        None,
                        ends_turn=False,
                    )
                    continue
                # OPS-4: one turn at a time. The flag is set here, as the frame is accepted, so frames
                # sent back to back are refused instead of queueing behind the running turn.
                self.turn_running = True
                await inbox.put(text)
        except WebSocketDisconnect:
            pass
        finally:
            await inbox.put(None)

    async def _send_error(self, error: _TurnError, request_id: str | None, *, ends_turn: bool = True) -> None:
        if ends_turn:
            self.turn_running = False
        with contextlib.suppress(Exception):
            await self.websocket.send_text(_error_frame(error, request_id))

    # -- one turn -------------------------------------------------------------------------------

    async def _turn(self, text: str) -> None:
        try:
            frame = parse_json_object(text)  # OPS-1: too deep or lone surrogates get an error frame
        except SubLaneError as error:
            message = "The frame is not valid JSON." if error.code == "invalid_json" else error.message
            await self._send_error(_TurnError(400, error.code, message), None)
            return
        if frame.get("type") not in ("response.create", "response.processed"):
            await self._send_error(
                _TurnError(400, "invalid_request", "Expected a 'response.create' frame."), None
            )
            return
        if frame["type"] == "response.processed":
            return
        body = {key: value for key, value in frame.items() if key != "type"}
        prewarm = body.get("generate") is False
        runtime = self.runtime
        try:
            intent = read_intent(WireProtocol.RESPONSES, self.headers, body)
        except SubLaneError as error:
            await self._send_error(_TurnError(error.status, error.code, error.message), None)
            return
        problem = body_field_problem(WireProtocol.RESPONSES, body)  # OPS-1: nothing goes upstream
        if problem is not None:
            await self._send_error(_TurnError(400, "invalid_request", problem[1]), None)
            return
        provider, model = split_model(intent.model, runtime.adapters)
        if model.endswith(")"):  # a thinking-level suffix (CAT-2, ALIAS-2)
            model = await resolve_level_suffix(runtime, self.principal, model)
        providers = tuple(  # upstream sockets for Responses providers; any other through the hub
            name
            for name in runtime.serving(WireProtocol.RESPONSES, UpstreamOperation.STREAM, provider)
            if runtime.adapters[name].sessions or runtime.adapters[name].protocol != WireProtocol.RESPONSES
        )
        if not providers:
            shown = f"{provider}/{model}" if provider else model
            await self._send_error(_TurnError(404, "model_not_found", f"No account serves {shown}."), None)
            return
        principal = self.principal
        call = ModelCall.start(
            runtime.clock, runtime, new_request_id(), principal, model, "responses_ws", "responses"
        )
        request_id = None if prewarm else call.request_id
        try:
            check_policy(principal, model)
            review = review_link(self.headers, body)  # an auto-review child keys its own thread
            grant = await self._acquire(
                call,
                providers,
                review.child_key if review is not None else intent.conversation_key,
                intent.continuation,
                prewarm,
                parent_key=review.parent_key if review is not None else None,
            )
        except SubLaneError as error:
            if not prewarm:
                call.routing = call.routing or error.routing  # HIST-12: refused during routing
                call.finish(Outcome.REJECTED, error.code)
            await self._send_error(
                _TurnError(error.status, error.code, error.message, error.retry_after, error.headers),
                request_id,
            )
            return
        if grant is None:  # a prewarm with no free slot: answer it locally, nothing to warm
            await self._local_prewarm(body)
            return
        call.take(grant)
        try:
            await self._run(call, grant, body, prewarm)
        except asyncio.CancelledError:
            self._end(call, prewarm, Outcome.CANCELED, "client_canceled")
            raise
        except WebSocketDisconnect:  # the client left while a frame was on its way to it
            self._end(call, prewarm, Outcome.CANCELED, "client_canceled")
        except _TurnError as error:
            self._end(call, prewarm, Outcome.ERROR, error.code)
            await self._send_error(error, request_id)
        except Exception:
            _log.exception("websocket turn failed")
            self._end(call, prewarm, Outcome.ERROR, "internal_error")
            await self._send_error(
                _TurnError(500, "internal_error", "SubLane failed during the turn."), request_id
            )

    def _end(self, call: ModelCall, prewarm: bool, outcome: Outcome, code: str | None) -> None:
        if call.finished:
            return
        if prewarm:
            if call.grant is not None:
                call.grant.release(str(outcome))
            call.finished = True
        else:
            call.finish(outcome, code)

    async def _acquire(
        self,
        call: ModelCall,
        providers: tuple[str, ...],
        key: str | None,
        continuation: bool,
        prewarm: bool,
        *,
        parent_key: str | None = None,
    ) -> Grant | None:
        """The turn's slot; a prewarm never waits (no slot: it is answered locally)."""
        try:
            return await schedule(
                self.runtime,
                self.principal,
                providers,
                call.model,
                call.request_id,
                conversation_key=key,
                continuation=continuation,
                wait=not prewarm,
                parent_key=parent_key,
            )
        except SubLaneError as error:
            if prewarm and error.code in ("account_wait_timeout", "account_queue_full"):
                return None
            raise

    async def _local_prewarm(self, body: dict[str, Any]) -> str:
        response: dict[str, Any] = {
            "id": "resp_" + new_request_id()[4:],
            "object": "response",
            "status": "completed",
            "model": body.get("model"),
            "output": [],
            "usage": None,
        }
        await self.websocket.send_text(json.dumps({"type": "response.created", "response": response}))
        self.turn_running = False
        await self.websocket.send_text(json.dumps({"type": "response.completed", "response": response}))
        return str(response["id"])

    async def _connect(self, grant: Grant, model: str) -> _Upstream:
        runtime = self.runtime
        account = grant.account
        if self.upstream is not None:
            if self.upstream.account.id == account.id:
                return self.upstream
            await self.upstream.close()
            self.upstream = None
        adapter = runtime.adapters[account.provider]
        credentials = await runtime.vault.get(account.id, account.provider)
        refreshed = False
        while True:
            try:
                session = await adapter.open_session(
                    credentials.bundle, self.headers, open_timeout=runtime.settings.header_timeout_s
                )
            except SessionRefused as refused:
                failure = refused.failure
                if failure.kind is FailureKind.UNAUTHORIZED:
                    credentials = await runtime.vault.rejected(
                        account.id, account.provider, credentials, after_refresh=refreshed
                    )
                    refreshed = True
                    continue
                # COOL-2, MCOOL-1: a refused handshake (5xx, 408) counts against this model only.
                report_refusal(grant, failure, sender=runtime, model=model)
                status = failure.status
                raise _TurnError(
                    status if status < 500 else 502, failure.code, failure.message, failure.retry_after
                ) from None
            except UpstreamUnreachable as exc:
                _log.warning("upstream websocket unreachable: %s", exc)
                raise _TurnError(502, "upstream_error", "The provider could not be reached.") from None
            self.upstream = _Upstream(account, adapter, session, credentials)
            return self.upstream

    async def _run(self, call: ModelCall, grant: Grant, body: dict[str, Any], prewarm: bool) -> None:
        if self.runtime.adapters[grant.account.provider].protocol != WireProtocol.RESPONSES:
            await self._run_translated(call, grant, body, prewarm)
            return
        try:
            upstream = await self._connect(grant, call.model)
        except SubLaneError as error:
            raise _TurnError(error.status, error.code, error.message, error.retry_after) from None
        observer = upstream.adapter.new_observer(call.state)
        try:
            await upstream.session.send_turn(body, model=call.model)
            deadline = asyncio.get_running_loop().time() + self.runtime.settings.request_timeout_s
            while True:
                text = await self._recv(upstream, deadline)
                await self._forward(call, upstream, text, observer, prewarm)
                if call.state.finished:
                    break
        except SessionClosed:
            self.upstream = None
            call.state.error_code = call.state.error_code or "upstream_stream_error"
            raise _TurnError(
                502, "upstream_stream_error", "The provider closed the socket mid-response."
            ) from None
        outcome = call.state.outcome or Outcome.ERROR
        self._end(call, prewarm, outcome, call.state.error_code if outcome is Outcome.ERROR else None)

    async def _run_translated(
        self, call: ModelCall, grant: Grant, body: dict[str, Any], prewarm: bool
    ) -> None:
        """A turn on a provider of another protocol: one translated HTTP stream (XLAT-1)."""
        if prewarm:  # nothing to warm on an HTTP upstream: answered here, the slot given back
            self._end(call, prewarm, Outcome.SUCCESS, None)
            response_id = await self._local_prewarm(body)
            self.history.remember(body, {"id": response_id, "output": []})  # a next turn continues it
            return

        async def send(event: dict[str, Any], terminal: bool) -> None:
            if event.get("type") in _TAGGED_EVENTS:
                event["request_id"] = call.request_id
            if terminal:
                self.turn_running = False  # the next turn may come as soon as the client sees this
            await self.websocket.send_text(json.dumps(event, separators=(",", ":"), ensure_ascii=False))

        key = read_intent(WireProtocol.RESPONSES, self.headers, body).conversation_key
        try:
            await run_hub_turn(self.runtime, call, grant, body, self.headers, key, self.history, send)
        except HubTurnError as error:
            raise _TurnError(error.status, error.code, error.message, error.retry_after) from None

    async def _recv(self, upstream: _Upstream, deadline: float) -> str:
        """The next upstream frame, within the turn deadline (ADM-9) and the idle timeout (TIME-2, OPS-4)."""
        settings = self.runtime.settings
        remaining = deadline - asyncio.get_running_loop().time()
        idle = settings.stream_idle_timeout_s
        limit = min(remaining, idle) if idle > 0 else remaining
        try:
            return await asyncio.wait_for(upstream.session.recv(), timeout=max(0.0, limit))
        except TimeoutError:
            self.upstream = None  # mid-response: this upstream socket cannot carry another turn
            with contextlib.suppress(Exception):
                await upstream.close()
            if idle > 0 and limit == idle and remaining > idle:
                raise _TurnError(
                    504, "stream_idle_timeout", "The provider sent nothing for too long."
                ) from None
            raise _TurnError(504, "request_timeout", "The turn ran past its deadline.") from None

    async def _forward(
        self, call: ModelCall, upstream: _Upstream, text: str, observer: StreamObserver, prewarm: bool
    ) -> None:
        kind = _frame_type(text)
        quota_events = upstream.adapter.quota_events
        if (
            kind in _TAGGED_EVENTS
            or kind in _TERMINAL
            or kind in quota_events
            or (kind is not None and observer.wants(kind))
        ):
            payload = json.loads(text)
            if kind == "error" and isinstance(payload.get("status") or payload.get("status_code"), int):
                self._wrapped_error(call, upstream.adapter, payload)
            elif kind in quota_events:
                self._quota(upstream, payload)
            else:
                observer.observe_payload(payload)
                call.note_output()
            if kind in _TAGGED_EVENTS or kind == "error":
                if not prewarm:
                    payload["request_id"] = call.request_id
                text = json.dumps(payload, separators=(",", ":"))
        else:
            call.state.events += 1
        if call.state.finished:
            # Record and free the slot before the client can see the end and send its next turn
            # (WAIT-7), and accept that next turn from now on.
            outcome = call.state.outcome or Outcome.ERROR
            self._end(call, prewarm, outcome, call.state.error_code if outcome is Outcome.ERROR else None)
            self.turn_running = False
        await self.websocket.send_text(text)

    def _wrapped_error(self, call: ModelCall, adapter: ProviderAdapter, payload: dict[str, Any]) -> None:
        status = int(payload.get("status") or payload.get("status_code") or 500)
        raw_headers = payload.get("headers")
        headers = {str(k): str(v) for k, v in raw_headers.items()} if isinstance(raw_headers, dict) else {}
        failure = adapter.classify_failure(
            status, headers, json.dumps({"error": payload.get("error")}).encode(), self.runtime.clock.time()
        )
        if call.grant is not None:
            if failure.kind is FailureKind.QUOTA_EXHAUSTED:  # an observation, not a cooldown (QUOTA-7)
                observe_exhaustion(self.runtime, adapter, call.grant.account, headers, failure)
            report_refusal(call.grant, failure, sender=self.runtime, model=call.model)
        call.upstream_status = status
        call.state.outcome = Outcome.ERROR
        call.state.error_code = failure.code

    def _quota(self, upstream: _Upstream, payload: dict[str, Any]) -> None:
        if not signals.quota_observed.has_receivers:
            return
        now = self.runtime.clock.time()
        plan, windows = upstream.adapter.quota_from_event(payload, now)
        if not windows:
            return
        account = upstream.account
        signals.quota_observed.send(
            signals.QuotaObserved(
                account_id=account.id,
                lifecycle_revision=account.lifecycle_revision,
                observed_at=now,
                plan=plan,
                windows=windows,
            ),
            sender=self.runtime,
        )


async def reader_done(reader: asyncio.Task[None]) -> None:
    """Wait until the client reader ends (the client went away)."""
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await asyncio.shield(reader)


@router.websocket("/v1/responses")
async def responses_websocket(websocket: WebSocket) -> None:
    """Responses over WebSocket. A bad key is refused before the upgrade with HTTP 401."""
    runtime = client_runtime(websocket)
    try:
        principal = await runtime.keys.authenticate(websocket.headers)
    except SubLaneError as error:
        body = openai_error_body(error.status, error.code, error.message)
        try:
            await websocket.send_denial_response(JSONResponse(body, status_code=error.status))
        except RuntimeError:
            await websocket.close(code=1008, reason=error.code)
        return
    await websocket.accept()
    try:
        await ClientSocket(runtime, websocket, principal).serve()
    finally:
        with contextlib.suppress(Exception):
            await websocket.close()
