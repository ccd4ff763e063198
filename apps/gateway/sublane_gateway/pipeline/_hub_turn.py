"""A Responses-over-WebSocket turn served by one HTTP stream (XLAT-1).

The client speaks Responses over its socket; the chosen account's provider has no upstream socket
of that protocol (another protocol, or Responses over HTTP only), so the turn is one HTTP stream:
the body goes through the hub to the upstream's protocol and dialect, the upstream's events come
back as Responses events, one text frame each.

``previous_response_id`` only names state on the upstream that produced it. For a translated turn
that state is this gateway's: :class:`SocketHistory` keeps the last translated turn's whole input and
output per socket, so a next turn that continues it (what the Codex CLI sends over a socket) is
expanded into full history before translation. Any other ``previous_response_id`` is refused by
the translation (400 ``unsupported_for_provider``, XLAT-3).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sublane_core import Outcome, SubLaneError, UpstreamOperation, WireProtocol
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._entry import refusal_reply
from sublane_gateway.pipeline._failover import fails_over
from sublane_gateway.pipeline._identity import CallIdentity
from sublane_gateway.pipeline._relay import decoded, finish_call, observe_blocks, watch_ending
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_gateway.pipeline._schedule import recheck_before_retry
from sublane_gateway.pipeline._send import UpstreamRefused, send_with_recovery
from sublane_protocols import HubTranslator, TranslationRefused, events_at_end, hub_translator
from sublane_protocols.responses import ResponsesFrames
from sublane_providers import (
    Credentials,
    ProviderAdapter,
    SseFramer,
    UpstreamError,
    UpstreamRequest,
    UpstreamResponse,
    chunks_of,
)
from sublane_scheduler import Grant

SendEvent = Callable[[dict[str, Any], bool], Awaitable[None]]


class HubTurnError(Exception):
    """The turn ended before its stream: ``(status, code, message, retry_after)`` for the client."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


class AttemptFailed(Exception):
    """The turn's attempt failed before its stream, for a reason of its account that another
    account may not share (FAIL-1); the call is not finished: the turn may move on, or answer
    with :func:`refusal_error`."""

    def __init__(self, error: SubLaneError | UpstreamRefused) -> None:
        super().__init__(str(error))
        self.error = error


def refusal_error(
    runtime: ClientRuntime, call: ModelCall, error: SubLaneError | UpstreamRefused
) -> HubTurnError:
    """Finish ``call`` refused by ``error``; what the client is told, as a :class:`HubTurnError`."""
    reply = refusal_reply(runtime, call, error, WireProtocol.RESPONSES)
    detail = reply.json().get("error", {})
    retry_after = reply.headers.get("retry-after")
    return HubTurnError(
        reply.status,
        str(detail.get("code") or "upstream_error"),
        str(detail.get("message") or "The provider refused the request."),
        int(retry_after) if retry_after and retry_after.isdigit() else None,
    )


@dataclass(slots=True)
class SocketHistory:
    """The last translated turn of one client socket: its response id and its whole conversation."""

    response_id: str | None = None
    items: list[Any] = field(default_factory=list)

    def expand(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with a ``previous_response_id`` of this socket's last turn made into full input."""
        previous = body.get("previous_response_id")
        if previous is None or previous != self.response_id:
            return body
        expanded = {key: value for key, value in body.items() if key != "previous_response_id"}
        new_input = body.get("input")
        if isinstance(new_input, str):
            new_input = [{"type": "message", "role": "user", "content": new_input}]
        expanded["input"] = [*self.items, *(new_input if isinstance(new_input, list) else [])]
        return expanded

    def remember(self, body: Mapping[str, Any], final: Mapping[str, Any] | None) -> None:
        if final is None or not isinstance(final.get("id"), str):
            self.response_id, self.items = None, []
            return
        given = body.get("input")
        if isinstance(given, str):
            given = [{"type": "message", "role": "user", "content": given}]
        output = final.get("output")
        self.response_id = final["id"]
        self.items = [
            *(given if isinstance(given, list) else []),
            *(
                item
                for item in (output if isinstance(output, list) else [])
                if item.get("type") != "reasoning"
            ),
        ]


async def run_hub_turn(
    runtime: ClientRuntime,
    call: ModelCall,
    grant: Grant,
    body: dict[str, Any],
    headers: Mapping[str, str],
    conversation_key: str | None,
    history: SocketHistory,
    send: SendEvent,
) -> None:
    """Serve one turn through the hub; ``send(event, terminal)`` writes one frame to the client.

    Raises :class:`HubTurnError` when no stream was opened (the call is finished then), or
    :class:`AttemptFailed` when the account's trouble kept it from opening (FAIL-1).
    """
    account = grant.account
    adapter = runtime.adapters[account.provider]
    translator = hub_translator(WireProtocol.RESPONSES, adapter.protocol)
    assert translator is not None
    body = history.expand(body)
    try:
        hub, upstream = translator.translate(body, adapter.dialect)
        upstream_body = dict(upstream, model=call.model)
    except TranslationRefused as refused:
        call.finish(Outcome.REJECTED, refused.code)
        raise HubTurnError(400, refused.code, refused.message) from None

    identity = CallIdentity(runtime.client_versions, call, WireProtocol.RESPONSES, headers)

    def build(credentials: Credentials) -> UpstreamRequest:
        return adapter.build_request(
            UpstreamOperation.STREAM,
            credentials.bundle,
            upstream_body,
            identity.headers_for(adapter),  # CLIENT-1: translated: SubLane's identity
            bound=conversation_key is not None,
            conversation_key=conversation_key,
        )

    async def recheck() -> None:
        await recheck_before_retry(runtime, call.principal, account, call.model)

    call.sent_at = runtime.clock.monotonic()
    try:
        response, _credentials = await send_with_recovery(runtime, grant, build, recheck, identity)
    except (SubLaneError, UpstreamRefused) as error:
        if fails_over(error):
            raise AttemptFailed(error) from None
        raise refusal_error(runtime, call, error) from None
    call.upstream_status = response.status_code
    call.accepted_at = runtime.clock.monotonic()
    await _relay(runtime, call, adapter, translator, response, body, hub, history, send)


async def _relay(
    runtime: ClientRuntime,
    call: ModelCall,
    adapter: ProviderAdapter,
    translator: HubTranslator,
    response: UpstreamResponse,
    body: dict[str, Any],
    hub: dict[str, Any],
    history: SocketHistory,
    send: SendEvent,
) -> None:
    observer = adapter.new_observer(call.state)
    events = translator.new_events(body, model=call.model, hub=hub)
    frames = ResponsesFrames()
    framer = SseFramer()
    unwrap = runtime.unwrappers[adapter.name]
    watch, watched_end = runtime.watch_of(adapter.name), False  # CLIENT-7
    final: dict[str, Any] | None = None

    async def emit(event: dict[str, Any]) -> dict[str, Any] | None:
        """Send one hub event as its frame; the final ``response`` when it was the terminal one."""
        out = frames.event(event)
        if out is None:
            return None
        call.note_output()
        terminal = frames.finished
        response_obj = out.get("response") if terminal else None
        if terminal:
            finish_call(call)
        await send(out, terminal)
        return response_obj if isinstance(response_obj, dict) else None

    timeout = max(0.0, call.started + runtime.settings.request_timeout_s - call.clock.monotonic())
    try:
        async with asyncio.timeout(timeout):
            async for chunk in chunks_of(response):
                blocks = framer.feed(chunk)
                if not blocks:
                    continue
                decoded_last = observe_blocks(observer, blocks, watch, call.request_id)
                if call.state.finished and not watched_end:
                    watched_end = True
                    watch_ending(watch, call, decoded_last)
                for payload in decoded(blocks):
                    if unwrap is not None:
                        payload = unwrap(payload)
                    for event in events.feed(payload):
                        final = await emit(event) or final
            for event in events_at_end(events):  # a terminal event owed to the stream's end
                final = await emit(event) or final
    except UpstreamError:
        call.state.error_code = call.state.error_code or "upstream_stream_error"
    except TimeoutError:
        call.state.outcome, call.state.error_code = Outcome.ERROR, "request_timeout"
    finally:
        await response.aclose()
    if not frames.finished:
        finish_call(call)
        closing = frames.closing_event(call.state.error_code or "upstream_stream_error")
        if closing is not None:
            await send(closing, True)
    history.remember(body, final)
