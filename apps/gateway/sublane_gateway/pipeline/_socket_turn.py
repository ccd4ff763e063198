"""The turns of a Responses-over-WebSocket client socket (PROTOCOLS §1.6), through the pipeline's steps.

A client socket carries sequential turns (``response.create`` frames). Each turn is its own model
attempt: its own lease, request ID and record (HIST-4: ``request_id`` is added to the created,
completed and incomplete events and to gateway errors). Between turns the socket holds no slot
(ADM-6). Turns go to an upstream session (:meth:`~sublane_providers.ProviderAdapter.open_session`)
on the chosen account when its adapter speaks Responses and offers sessions; the upstream socket
is kept for the next turn on the same account, because ``previous_response_id`` only resolves
there. A turn on any other provider (another protocol, or Responses over HTTP only) is one HTTP
stream through the hub (``_hub_turn``).

A prewarm (``generate: false``) is forwarded to the conversation's account to warm its cache, but
it is not a model attempt: it is never recorded (HIST-1).

The socket itself — reading frames, one turn at a time, the HTTP refusal before the upgrade — is
the route's (``routes/_responses_ws.py``); this module knows no web framework: it is given a
function that sends a text frame, which raises :class:`ClientGone` once the client has left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sublane_core import Outcome, SubLaneError, UpstreamOperation, WireProtocol, new_request_id, signals
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._failover import attempt_code, fails_over, move_on, moves_on_failure
from sublane_gateway.pipeline._group_models import aliased
from sublane_gateway.pipeline._hub_turn import (
    AttemptFailed,
    HubTurnError,
    SocketHistory,
    refusal_error,
    run_hub_turn,
)
from sublane_gateway.pipeline._identity import CallIdentity
from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._level_suffix import has_level, resolve_level_suffix
from sublane_gateway.pipeline._quota import observe_exhaustion
from sublane_gateway.pipeline._review import review_link
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_gateway.pipeline._schedule import check_policy, schedule, selection_recheck, split_model
from sublane_gateway.pipeline._send import EgressUnreached, report_refusal
from sublane_gateway.pipeline._upstream_watch import UNWATCHED, ProviderWatch
from sublane_protocols import body_field_problem, read_intent
from sublane_protocols.responses import openai_error_body
from sublane_providers import (
    KIND_EVENT,
    Credentials,
    FailureKind,
    OpensSessions,
    ProviderAdapter,
    ReportsQuotaInStream,
    SessionClosed,
    SessionEgressFailed,
    SessionRefused,
    StreamObserver,
    UpstreamFailure,
    UpstreamSession,
    UpstreamUnreachable,
    use_egress,
)
from sublane_scheduler import AccountInfo, Grant

_log = logging.getLogger("sublane.websocket")

_TYPE_PATTERN = re.compile(r'"type"\s*:\s*"([^"]+)"')
_TAGGED_EVENTS = frozenset({"response.created", "response.completed", "response.incomplete"})
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})

SendText = Callable[[str], Awaitable[None]]


class ClientGone(Exception):
    """The client left while a frame was on its way to it."""


class TurnError(Exception):
    """A turn ended before reaching the upstream stream; tell the client with an error frame."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
        *,
        moves_on: bool = False,
        frame: str | None = None,
    ) -> None:
        """``moves_on``: the account's trouble, before any output — the turn may fail over (FAIL-1);
        ``frame``: the upstream's own error frame, sent as it is when the turn does not move on."""
        super().__init__(code)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after
        self.headers = headers or {}
        self.moves_on, self.frame = moves_on, frame


def error_frame(error: TurnError, request_id: str | None) -> str:
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


def _turn_error(error: HubTurnError) -> TurnError:
    return TurnError(error.status, error.code, error.message, error.retry_after)


def _failed_code(failed: TurnError | AttemptFailed) -> str:
    return failed.code if isinstance(failed, TurnError) else attempt_code(failed.error)


def frame_type(text: str) -> str | None:
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
        watch: ProviderWatch = UNWATCHED,
    ) -> None:
        self.account = account
        self.watch = watch  # CLIENT-7: frame types the provider does not know are noted
        self.adapter = adapter
        self.session = session
        self.credentials = credentials
        # Stream events that carry quota, when the provider reports quota in its stream.
        self.quota_reporter = adapter if isinstance(adapter, ReportsQuotaInStream) else None
        self.quota_events = self.quota_reporter.quota_events if self.quota_reporter else frozenset()

    async def close(self) -> None:
        await self.session.close()


class SocketTurns:
    """The turns of one client socket: each decoded frame in, the frames of its answer out."""

    def __init__(
        self,
        runtime: ClientRuntime,
        principal: Principal,
        headers: Mapping[str, str],
        send_text: SendText,
        turn_free: Callable[[], None],
    ) -> None:
        """``send_text`` sends one frame (raising :class:`ClientGone` once the client left);
        ``turn_free`` tells the socket that its next turn may be accepted."""
        self.runtime = runtime
        self.principal = principal
        self.headers = headers
        self._send_text = send_text
        self._turn_free = turn_free
        self.upstream: _Upstream | None = None
        self._forwarded = False  # a frame of the current turn reached the client
        #: ``(binding digest, account)`` of the binding this socket's last prewarm made (FAIL-2)
        self._prewarm: tuple[str, int] | None = None
        self.history = SocketHistory()  # the last translated turn, for previous_response_id

    async def close(self) -> None:
        """The socket ended: its upstream session goes too."""
        if self.upstream is not None:
            await self.upstream.close()
            self.upstream = None

    async def send_error(self, error: TurnError, request_id: str | None, *, ends_turn: bool = True) -> None:
        """An error frame; ``ends_turn``: the turn is over and the next may come."""
        if ends_turn:
            self._turn_free()
        with contextlib.suppress(Exception):
            await self._send_text(error.frame if error.frame is not None else error_frame(error, request_id))

    async def turn(self, body: dict[str, Any]) -> None:
        """One turn: the body of a ``response.create`` frame (its fields but ``type``), answered
        to the end."""
        prewarm = body.get("generate") is False
        runtime = self.runtime
        try:
            intent = read_intent(WireProtocol.RESPONSES, self.headers, body)
        except SubLaneError as error:
            await self.send_error(TurnError(error.status, error.code, error.message), None)
            return
        problem = body_field_problem(WireProtocol.RESPONSES, body)  # OPS-1: nothing goes upstream
        if problem is not None:
            await self.send_error(TurnError(400, "invalid_request", problem[1]), None)
            return
        provider, model = split_model(intent.model, runtime.adapters)
        if has_level(model):  # a thinking-level suffix (CAT-2, ALIAS-2)
            model = await resolve_level_suffix(runtime, self.principal, model)
        requested, model = await aliased(runtime, self.principal, model)
        # An upstream socket where the provider offers one; any other turn is one HTTP stream.
        providers = runtime.serving(WireProtocol.RESPONSES, UpstreamOperation.STREAM, provider)
        if not providers:
            shown = f"{provider}/{model}" if provider else model
            await self.send_error(TurnError(404, "model_not_found", f"No account serves {shown}."), None)
            return
        principal = self.principal
        call = ModelCall.start(
            runtime.clock, runtime, new_request_id(), principal, model, "responses_ws", "responses"
        )
        call.requested_model = requested
        call.trace(runtime.tracing, self.headers)
        request_id = None if prewarm else call.request_id
        try:
            check_policy(principal, model)
            review = review_link(self.headers, body)  # an auto-review child keys its own thread
            call.queued_at = runtime.clock.monotonic()
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
            await self.send_error(
                TurnError(error.status, error.code, error.message, error.retry_after, error.headers),
                request_id,
            )
            return
        if grant is None:  # a prewarm with no free slot: answer it locally, nothing to warm
            await self._local_prewarm(body)
            return
        call.take(grant)
        key = review.child_key if review is not None else intent.conversation_key
        if key is not None and not prewarm:  # COST-4: a turn of a conversation
            turns = runtime.cache_turns
            note = turns.begin(
                principal.group_id, key, model, WireProtocol.RESPONSES, body, continuation=intent.continuation
            )
            call.note_turn(turns, note)
        self._adopt_prewarm_binding(grant, prewarm)
        while True:
            try:
                await self._run(call, grant, body, prewarm)
                if prewarm:
                    self._note_prewarm(call, grant, body)
            except asyncio.CancelledError:
                self._end(call, prewarm, Outcome.CANCELED, "client_canceled")
                raise
            except ClientGone:  # the client left while a frame was on its way to it
                self._end(call, prewarm, Outcome.CANCELED, "client_canceled")
            except (TurnError, AttemptFailed) as failed:
                moved = None
                if not prewarm and (isinstance(failed, AttemptFailed) or failed.moves_on):
                    moved = await move_on(
                        runtime,
                        call,
                        grant,
                        _failed_code(failed),
                        selection_recheck(runtime, principal, model),
                        providers=providers,
                        conversation_key=key,
                        continuation=intent.continuation,
                        parent_key=review.parent_key if review is not None else None,
                    )
                if moved is not None:  # FAIL-1: nothing reached the client; another account
                    grant = moved
                    body = self.history.expand(body)  # a continued prewarm, as full input
                    continue
                if prewarm:  # a prewarm that failed leaves no binding behind (FAIL-2)
                    await runtime.scheduler.forget_binding(grant)
                answer = (
                    failed
                    if isinstance(failed, TurnError)
                    else _turn_error(refusal_error(runtime, call, failed.error))
                )
                self._end(call, prewarm, Outcome.ERROR, answer.code)
                await self.send_error(answer, request_id)
            except Exception:
                _log.exception("websocket turn failed")
                self._end(call, prewarm, Outcome.ERROR, "internal_error")
                await self.send_error(
                    TurnError(500, "internal_error", "SubLane failed during the turn."), request_id
                )
            return

    def _note_prewarm(self, call: ModelCall, grant: Grant, body: dict[str, Any]) -> None:
        """A prewarm that bound its conversation: the binding stays provisional until a turn
        answers (FAIL-2), and its input is kept so that the turn continuing it can move as full
        input (the Codex CLI's first turn names the prewarm in ``previous_response_id``)."""
        if grant.made_binding is None or call.state.response_id is None:
            self._prewarm = None
            return
        self._prewarm = (grant.made_binding, grant.account.id)
        self.history.remember(body, {"id": call.state.response_id, "output": []})

    def _adopt_prewarm_binding(self, grant: Grant, prewarm: bool) -> None:
        """The first turn after this socket's prewarm holds the binding that prewarm made, as if
        it had made it: the turn may still fail over, taking the binding with it (FAIL-1/2)."""
        provisional, self._prewarm = self._prewarm, None
        if (
            not prewarm
            and provisional is not None
            and grant.made_binding is None
            and grant.account.id == provisional[1]
            and grant.routing.get("rule") == "kept_binding"
        ):
            grant.made_binding = provisional[0]

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
        await self._send_text(json.dumps({"type": "response.created", "response": response}))
        self._turn_free()
        await self._send_text(json.dumps({"type": "response.completed", "response": response}))
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
        assert isinstance(adapter, OpensSessions)  # _run sends only such providers' turns here
        credentials = await runtime.vault.get(account.id, account.provider)
        refreshed = False
        # CLIENT-1: the socket carries the client's identity or SubLane's, decided as it opens
        identity = CallIdentity(runtime.client_versions, None, WireProtocol.RESPONSES, self.headers)
        headers = identity.headers_for(adapter)
        while True:
            try:
                with use_egress(credentials.egress):
                    session = await adapter.open_session(
                        credentials.bundle, headers, open_timeout=runtime.settings.header_timeout_s
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
                raise TurnError(
                    status if status < 500 else 502,
                    failure.code,
                    failure.message,
                    failure.retry_after,
                    moves_on=moves_on_failure(failure),
                ) from None
            except SessionEgressFailed as exc:  # EGRESS-2: nothing was sent, no cooldown
                runtime.egress_failed(account.id, str(exc))
                _log.warning("egress proxy of account %s failed: %s", account.id, exc)
                error = EgressUnreached()
                raise TurnError(502, error.code, error.message, moves_on=True) from None
            except UpstreamUnreachable as exc:  # nothing was sent: another account may serve it
                _log.warning("upstream websocket unreachable: %s", exc)
                raise TurnError(
                    502, "upstream_error", "The provider could not be reached.", moves_on=True
                ) from None
            self.upstream = _Upstream(
                account, adapter, session, credentials, self.runtime.watch_of(adapter.name)
            )
            return self.upstream

    async def _run(self, call: ModelCall, grant: Grant, body: dict[str, Any], prewarm: bool) -> None:
        adapter = self.runtime.adapters[grant.account.provider]
        if call.cache_note is not None:
            call.cache_lifetime_s = adapter.cache_lifetime_s(body)
        if adapter.protocol != WireProtocol.RESPONSES or not isinstance(adapter, OpensSessions):
            await self._run_translated(call, grant, body, prewarm)
            return
        try:
            upstream = await self._connect(grant, call.model)
        except SubLaneError as error:  # the account's credentials (CRED rules ran)
            raise TurnError(
                error.status, error.code, error.message, error.retry_after, moves_on=fails_over(error)
            ) from None
        observer = upstream.adapter.new_observer(call.state)
        self._forwarded = False
        clock = self.runtime.clock
        try:
            call.sent_at, call.accepted_at = clock.monotonic(), None
            await upstream.session.send_turn(body, model=call.model)
            deadline = asyncio.get_running_loop().time() + self.runtime.settings.request_timeout_s
            while True:
                text = await self._recv(upstream, deadline)
                if call.accepted_at is None:  # OPS-13: the upstream's first byte of this turn
                    call.accepted_at = clock.monotonic()
                await self._forward(call, upstream, text, observer, prewarm)
                if call.state.finished:
                    break
        except SessionClosed:
            self.upstream = None
            call.state.error_code = call.state.error_code or "upstream_stream_error"
            raise TurnError(
                502, "upstream_stream_error", "The provider closed the socket mid-response."
            ) from None
        outcome = call.state.outcome or Outcome.ERROR
        self._end(call, prewarm, outcome, call.state.error_code if outcome is Outcome.ERROR else None)

    async def _run_translated(
        self, call: ModelCall, grant: Grant, body: dict[str, Any], prewarm: bool
    ) -> None:
        """A turn on a provider without a Responses socket: one HTTP stream through the hub (XLAT-1)."""
        if prewarm:  # nothing to warm on an HTTP upstream: answered here, the slot given back
            self._end(call, prewarm, Outcome.SUCCESS, None)
            response_id = await self._local_prewarm(body)
            self.history.remember(body, {"id": response_id, "output": []})  # a next turn continues it
            return

        async def send(event: dict[str, Any], terminal: bool) -> None:
            if event.get("type") in _TAGGED_EVENTS:
                event["request_id"] = call.request_id
            if terminal:
                self._turn_free()  # the next turn may come as soon as the client sees this
            await self._send_text(json.dumps(event, separators=(",", ":"), ensure_ascii=False))

        key = read_intent(WireProtocol.RESPONSES, self.headers, body).conversation_key
        try:
            await run_hub_turn(self.runtime, call, grant, body, self.headers, key, self.history, send)
        except HubTurnError as error:
            raise _turn_error(error) from None

    async def _recv(self, upstream: _Upstream, deadline: float) -> str:
        """The next upstream frame, within the turn deadline (ADM-9) and the idle timeout (TIME-2, OPS-4)."""
        settings = self.runtime.settings
        remaining = deadline - asyncio.get_running_loop().time()
        idle = settings.stream_idle_timeout_s
        limit = min(remaining, idle) if idle > 0 else remaining
        try:
            # asyncio.timeout rather than wait_for: no task per frame, and none of Python 3.11's
            # wait_for races between a cancellation and a frame arriving in the same turn
            async with asyncio.timeout(max(0.0, limit)):
                return await upstream.session.recv()
        except TimeoutError:
            self.upstream = None  # mid-response: this upstream socket cannot carry another turn
            with contextlib.suppress(Exception):
                await upstream.close()
            if idle > 0 and limit == idle and remaining > idle:
                raise TurnError(
                    504, "stream_idle_timeout", "The provider sent nothing for too long."
                ) from None
            raise TurnError(504, "request_timeout", "The turn ran past its deadline.") from None

    async def _forward(
        self, call: ModelCall, upstream: _Upstream, text: str, observer: StreamObserver, prewarm: bool
    ) -> None:
        kind = frame_type(text)
        watch = upstream.watch
        if kind is not None and kind not in watch.events:
            watch.note(KIND_EVENT, kind, call.request_id)
        quota_events = upstream.quota_events
        if (
            kind in _TAGGED_EVENTS
            or kind in _TERMINAL
            or kind in quota_events
            or (kind is not None and observer.wants(kind))
        ):
            payload = json.loads(text)
            if kind == "error" and isinstance(payload.get("status") or payload.get("status_code"), int):
                failure = self._wrapped_error(call, upstream.adapter, payload)
                if not self._forwarded and not prewarm and moves_on_failure(failure):
                    # FAIL-1: the upstream refused before any output; the turn may move on, else
                    # the client gets this very frame.
                    self.upstream = None
                    with contextlib.suppress(Exception):
                        await upstream.close()
                    payload["request_id"] = call.request_id
                    raise TurnError(
                        failure.status,
                        failure.code,
                        failure.message,
                        failure.retry_after,
                        moves_on=True,
                        frame=json.dumps(payload, separators=(",", ":")),
                    )
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
            self._turn_free()
        self._forwarded = True
        await self._send_text(text)

    def _wrapped_error(
        self, call: ModelCall, adapter: ProviderAdapter, payload: dict[str, Any]
    ) -> UpstreamFailure:
        status = int(payload.get("status") or payload.get("status_code") or 500)
        raw_headers = payload.get("headers")
        headers = {str(k): str(v) for k, v in raw_headers.items()} if isinstance(raw_headers, dict) else {}
        failure = adapter.classify_failure(
            status, headers, json.dumps({"error": payload.get("error")}).encode(), self.runtime.clock.time()
        )
        self.runtime.watch_of(adapter.name).error(failure.code, call.request_id)  # CLIENT-7
        if call.grant is not None:
            if failure.kind is FailureKind.QUOTA_EXHAUSTED:  # an observation, not a cooldown (QUOTA-7)
                observe_exhaustion(self.runtime, adapter, call.grant.account, headers, failure)
            report_refusal(call.grant, failure, sender=self.runtime, model=call.model)
        call.upstream_status = status
        call.state.outcome = Outcome.ERROR
        call.state.error_code = failure.code
        return failure

    def _quota(self, upstream: _Upstream, payload: dict[str, Any]) -> None:
        if not signals.quota_observed.has_receivers:
            return
        reporter = upstream.quota_reporter
        if reporter is None:
            return
        now = self.runtime.clock.time()
        plan, windows = reporter.quota_from_event(payload, now)
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
