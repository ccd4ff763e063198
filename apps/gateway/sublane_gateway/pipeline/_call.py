"""One model attempt from start to finish: its timings, outcome and the single release of its slot."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sublane_core import Clock, Outcome, bind_request_id, signals
from sublane_gateway.pipeline._keys import Principal
from sublane_providers import StreamState
from sublane_scheduler import Grant

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_SUCCESS, _INCOMPLETE, _ERROR = Outcome.SUCCESS, Outcome.INCOMPLETE, Outcome.ERROR

if TYPE_CHECKING:
    from sublane_gateway.pipeline._cache_turns import ConversationTurns, TurnNote
    from sublane_gateway.pipeline._tracing import Tracing


@dataclass(slots=True)
class ModelCall:
    """Bookkeeping of one attempt. :meth:`finish` reports it, then releases the lease, once.

    ``sender`` is the runtime: the events the call emits carry it, for observers of that app only.
    """

    clock: Clock
    sender: object
    request_id: str
    principal: Principal
    model: str
    protocol: str
    operation: str
    started_wall: float
    started: float
    provider: str | None = None
    account_id: int | None = None
    grant: Grant | None = None
    upstream_status: int | None = None
    routing: dict[str, Any] | None = None
    state: StreamState = field(default_factory=StreamState)
    first_output_at: float | None = None
    finished: bool = False
    #: The attempts that failed and moved on (FAIL-2): ``{"account_id", "outcome", "error_code"}``
    #: each; ``None`` while the first attempt runs (most requests never have one).
    attempts: list[dict[str, Any]] | None = None
    #: The alias the client asked for, when ``model`` is what it stands for (ALIAS-1): recorded as
    #: the call's ``model``, with ``model`` as its ``served_model``.
    requested_model: str | None = None
    tracing: Tracing | None = None  # OPS-12
    trace_headers: dict[str, str] | None = None  # the client's traceparent/tracestate
    # OPS-13 (and OPS-12's spans): when the call asked for a slot, when the first slot was granted,
    # when the last attempt's request was handed to the upstream, and when that upstream's answer
    # head arrived (its first byte)
    queued_at: float | None = None
    granted_at: float | None = None
    sent_at: float | None = None
    accepted_at: float | None = None
    # COST-4, set when the call belongs to a conversation: the turn as it began, where the
    # conversation's previous turn is kept, and the prompt-cache lifetime its upstream gave it
    cache_note: TurnNote | None = None
    cache_turns: ConversationTurns | None = None
    cache_lifetime_s: float | None = None
    #: Called when the call ends in success (CLIENT-2: the native client version it carried was seen).
    on_success: Callable[[], None] | None = None

    @classmethod
    def start(
        cls,
        clock: Clock,
        sender: object,
        request_id: str,
        principal: Principal,
        model: str,
        protocol: str,
        operation: str,
        arrived: tuple[float, float] | None = None,
    ) -> ModelCall:
        """Begin an attempt; from here on the current task's log lines carry its request ID (OPS-11).

        ``arrived``: ``(monotonic, wall)`` when the request reached the gateway, before its body was
        read and its key checked: the record's clock starts there (HIST-5), else now.
        """
        bind_request_id(request_id)
        started, started_wall = arrived if arrived is not None else (clock.monotonic(), clock.time())
        return cls(
            clock=clock,
            sender=sender,
            request_id=request_id,
            principal=principal,
            model=model[:128],
            protocol=protocol,
            operation=operation,
            started_wall=started_wall,
            started=started,
        )

    def take(self, grant: Grant) -> None:
        """The call holds ``grant``'s slot from now on."""
        self.grant, self.routing = grant, grant.routing
        self.provider, self.account_id = grant.account.provider, grant.account.id
        if self.granted_at is None:
            self.granted_at = self.clock.monotonic()

    def trace(self, tracing: Tracing | None, headers: Mapping[str, str]) -> None:
        """Trace this call (OPS-12), as a child of the client's ``traceparent`` when it sent one."""
        if tracing is not None:
            self.tracing = tracing
            found = {name: headers[name] for name in ("traceparent", "tracestate") if name in headers}
            self.trace_headers = found or None

    def note_attempt(self, error_code: str) -> None:
        """The current attempt failed with ``error_code`` and the request moved on (FAIL-2): what it
        observed is dropped (it sent no output), its account noted."""
        attempt = {"account_id": self.account_id, "outcome": "error", "error_code": error_code}
        self.state, self.upstream_status = StreamState(), None
        if self.attempts is None:
            self.attempts = [attempt]
        else:
            self.attempts.append(attempt)

    def tried_accounts(self) -> list[int]:
        """The accounts of the attempts that moved on."""
        return [attempt["account_id"] for attempt in self.attempts or () if attempt["account_id"] is not None]

    def note_output(self) -> None:
        """Mark the first non-empty delta (HIST-5), measured from gateway processing start."""
        if self.first_output_at is None and self.state.first_delta is not None:
            self.first_output_at = self.clock.monotonic()

    def server_timing(self) -> str:
        """The ``Server-Timing`` value of an answer whose upstream head has arrived (OPS-13)."""
        granted, sent, accepted = self.granted_at, self.sent_at, self.accepted_at
        if granted is None or sent is None or accepted is None:
            return ""
        queued = self.queued_at
        queue = round((granted - (self.started if queued is None else queued)) * 1000)
        upstream = round((accepted - sent) * 1000)
        sublane = max(round((accepted - self.started) * 1000) - queue - upstream, 0)
        return f"queue;dur={queue}, upstream;dur={upstream}, sublane;dur={sublane}"

    def timing(self, now: float) -> dict[str, int] | None:
        """Where the call's time went, in milliseconds (OPS-13); ``None`` before an upstream answered.

        ``queue_ms``: admission and the wait for a slot (asked → granted); ``connect_ms``: the grant
        to the request handed to the upstream (credentials, a refresh, building it);
        ``first_byte_ms``: arrival to the upstream's answer head; ``total_ms``: arrival to now;
        ``sublane_ms``: the part of ``first_byte_ms`` neither queued nor waiting on the upstream
        (reading the body, the key check, translation, ``connect_ms``, an attempt that moved on).
        """
        granted, sent, accepted = self.granted_at, self.sent_at, self.accepted_at
        if granted is None or sent is None or accepted is None:
            return None
        started = self.started
        queued = self.queued_at
        queue = round((granted - (started if queued is None else queued)) * 1000)
        first_byte = round((accepted - started) * 1000)
        upstream = round((accepted - sent) * 1000)
        return {
            "queue_ms": queue,
            "connect_ms": round((sent - granted) * 1000),
            "first_byte_ms": first_byte,
            "total_ms": round((now - started) * 1000),
            "sublane_ms": max(first_byte - queue - upstream, 0),
        }

    def finish(self, outcome: Outcome, error_code: str | None = None) -> bool:
        """Report the attempt (before the slot is free, WAIT-7), then release it. Once only."""
        if self.finished:
            return False
        self.finished = True
        reason = self._cache_miss_reason(outcome) if self.cache_note is not None else None
        if outcome is _SUCCESS and self.on_success is not None:
            self.on_success()
        if signals.request_finished.has_receivers:
            self._report(outcome, error_code, reason)
        self._report_upstream(outcome, error_code)
        if self.tracing is not None:
            usage = self.state.usage
            tokens = (
                (usage.input_tokens, usage.output_tokens, usage.cached_tokens)
                if usage
                else (None, None, None)
            )
            self.tracing.record(self, self.clock.monotonic(), str(outcome), error_code, tokens)
        if self.grant is not None:
            self.grant.release(str(outcome))
        return True

    def _report_upstream(self, outcome: Outcome, error_code: str | None) -> None:
        """A stream that ended well clears failure streaks; one broken after a 200 is a failure (MCOOL-1)."""
        grant = self.grant
        if grant is None or self.upstream_status != 200:
            return
        if error_code == "request_timeout":  # our own deadline says nothing about the account (COOL-2)
            return
        if outcome in (_SUCCESS, _INCOMPLETE):
            grant.report_success()
            if signals.upstream_succeeded.has_receivers:
                signals.upstream_succeeded.send(
                    signals.UpstreamSucceeded(
                        account_id=grant.account.id, model=self.model, runtime_revision=grant.revision
                    ),
                    sender=self.sender,
                )
        elif outcome == _ERROR:
            grant.report_failure()
            if signals.upstream_failed.has_receivers:
                signals.upstream_failed.send(
                    signals.UpstreamFailed(
                        account_id=grant.account.id,
                        model=self.model,
                        runtime_revision=grant.revision,
                        status=200,
                        error_code=error_code or "stream_error",
                    ),
                    sender=self.sender,
                )

    def note_turn(self, turns: ConversationTurns, note: TurnNote) -> None:
        """The call is a turn of a conversation (COST-4): its miss reason is decided as it ends."""
        self.cache_turns, self.cache_note = turns, note

    def _cache_miss_reason(self, outcome: Outcome) -> str | None:
        """COST-4: why this turn missed the cache; a served turn becomes the conversation's previous."""
        turns, note, account_id = self.cache_turns, self.cache_note, self.account_id
        if turns is None or note is None or account_id is None:
            return None
        usage = self.state.usage
        return turns.finish(
            note,
            account_id=account_id,
            at=self.started_wall,
            lifetime_s=self.cache_lifetime_s,
            outcome=outcome,
            input_tokens=usage.input_tokens if usage else None,
            cached_tokens=usage.cached_tokens if usage else None,
        )

    def _report(self, outcome: Outcome, error_code: str | None, cache_miss_reason: str | None) -> None:
        now = self.clock.monotonic()
        usage = self.state.usage
        routing = self.routing
        if self.attempts is not None:  # FAIL-2: each attempt, the last one as the request ended
            last = {"account_id": self.account_id, "outcome": str(outcome), "error_code": error_code}
            routing = dict(routing or {}, attempts=[*self.attempts, last])
        signals.request_finished.send(
            signals.RequestFinished(
                request_id=self.request_id,
                started_at=self.started_wall,
                duration_ms=round((now - self.started) * 1000),
                first_token_ms=(
                    round((self.first_output_at - self.started) * 1000)
                    if self.first_output_at is not None
                    else None
                ),
                user_id=self.principal.user_id,
                key_id=self.principal.key_id,
                group_id=self.principal.group_id,
                account_id=self.account_id,
                provider=self.provider,
                model=self.requested_model or self.model,
                protocol=self.protocol,
                operation=self.operation,
                outcome=outcome,
                error_code=error_code,
                upstream_status=self.upstream_status,
                input_tokens=usage.input_tokens if usage else None,
                output_tokens=usage.output_tokens if usage else None,
                cached_tokens=usage.cached_tokens if usage else None,
                cache_write_tokens=usage.cache_write_tokens if usage else None,
                cache_write_1h_tokens=usage.cache_write_1h_tokens if usage else None,
                routing=routing,
                served_model=self.model if self.requested_model is not None else None,
                cache_miss_reason=cache_miss_reason,
                timing=self.timing(now),
            ),
            sender=self.sender,
        )
