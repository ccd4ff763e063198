"""The steps every model call shares, whatever the provider: prepare, open upstream, refuse, relay.

A route describes its upstream request as an :class:`Upstream` (which provider, the conversation
key, how to build the request for a chosen account), and renders errors in its client protocol's
shape through an :data:`ErrorRender`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from sublane_core import SubLaneError, new_request_id, signals
from sublane_gateway.client._bodies import read_json_object, require_model
from sublane_gateway.client._call import ModelCall
from sublane_gateway.client._dispatch import (
    UpstreamRefused,
    check_policy,
    schedule,
    send_with_recovery,
    split_model,
)
from sublane_gateway.client._keys import Principal
from sublane_gateway.client._relay import EventObserver, relay_sse
from sublane_gateway.client._runtime import ClientRuntime, client_runtime
from sublane_providers import Credentials, FailureKind, Outcome, ProviderAdapter

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class ErrorRender(Protocol):
    """Renders an error in a client protocol's shape."""

    def __call__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        request_id: str | None = None,
        retry_after: float | None = None,
        param: str | None = None,
    ) -> Response: ...


@dataclass(frozen=True, slots=True)
class Upstream:
    """How one call reaches its provider."""

    provider: str
    conversation_key: str | None
    continuation: bool
    build: Callable[[ProviderAdapter, Mapping[str, Any], bool], httpx.Request]  # (adapter, bundle, bound)


def finish_call(call: ModelCall) -> None:
    """Finish a call from what its stream showed: terminal outcome, or an error when none came."""
    state = call.state
    outcome = state.outcome or Outcome.ERROR
    error_code = state.error_code if outcome in (Outcome.ERROR, Outcome.CANCELED) else None
    if state.outcome is None and error_code is None:
        error_code = "stream_incomplete"  # ended without a terminal event (MCOOL-1)
    call.finish(outcome, error_code)


def _observe_quota(
    runtime: ClientRuntime, adapter: ProviderAdapter, account_id: int, revision: int, response: httpx.Response
) -> None:
    if not signals.quota_observed.has_receivers:
        return
    now = runtime.clock.time()
    plan, windows = adapter.quota_from_headers(response.headers, now)
    if windows:
        signals.quota_observed.send(signals.QuotaObserved(account_id, revision, now, plan, windows))


async def prepare_call(
    request: Request, protocol: str, operation: str, providers: tuple[str, ...]
) -> tuple[ClientRuntime, Principal, dict[str, Any], ModelCall, str]:
    """Authenticate, read the body, resolve the provider and start the call's bookkeeping."""
    runtime = client_runtime(request)
    principal = await runtime.keys.authenticate(request.headers)
    body, _raw = await read_json_object(request)
    prefix, model = split_model(require_model(body))
    provider = prefix or providers[0]
    if provider not in providers or provider not in runtime.adapters:
        raise SubLaneError("model_not_found", f"No account in your group serves {prefix}/{model} here.")
    call = ModelCall.start(runtime.clock, new_request_id(), principal, model, protocol, operation)
    return runtime, principal, body, call, provider


async def open_upstream(
    runtime: ClientRuntime, call: ModelCall, principal: Principal, upstream: Upstream
) -> httpx.Response:
    """Take a slot on an account of the provider and get an accepted upstream response."""
    grant = await schedule(
        runtime,
        principal,
        upstream.provider,
        call.model,
        call.request_id,
        conversation_key=upstream.conversation_key,
        continuation=upstream.continuation,
    )
    call.grant, call.routing = grant, grant.routing
    account = grant.account
    call.provider, call.account_id = account.provider, account.id
    adapter = runtime.adapters[account.provider]
    bound = upstream.conversation_key is not None

    def build(credentials: Credentials) -> httpx.Request:
        return upstream.build(adapter, credentials.bundle, bound)

    async def recheck() -> None:
        current = await runtime.keys.authenticate_again(principal)
        check_policy(current, call.model)
        cooldown = runtime.scheduler.cooldowns.blocking(account.id, call.model)
        if cooldown is not None or runtime.vault.needs_reauth(account.id):
            raise SubLaneError("no_account_available", "The account became unavailable during retries.")

    response, _credentials = await send_with_recovery(runtime, grant, build, recheck)
    call.upstream_status = response.status_code
    _observe_quota(runtime, adapter, account.id, account.lifecycle_revision, response)
    return response


async def open_or_refuse(
    runtime: ClientRuntime, call: ModelCall, principal: Principal, upstream: Upstream, render: ErrorRender
) -> httpx.Response | Response:
    """Policy, scheduling and the upstream call: the accepted upstream response, or the error answer."""
    try:
        check_policy(principal, call.model)
        return await open_upstream(runtime, call, principal, upstream)
    except (SubLaneError, UpstreamRefused) as error:
        return refusal_response(runtime, call, error, render)
    except BaseException:
        call.finish(Outcome.CANCELED, "client_canceled")
        raise


_REFUSAL_CODES = {
    FailureKind.RATE_LIMITED: "upstream_rate_limited",
    FailureKind.QUOTA_EXHAUSTED: "upstream_rate_limited",
    FailureKind.MODEL_RATE_LIMITED: "model_rate_limited",
    FailureKind.FORBIDDEN: "upstream_forbidden",
    FailureKind.UNAUTHORIZED: "reauth_required",
}


def refusal_response(
    runtime: ClientRuntime, call: ModelCall, error: Exception, render: ErrorRender
) -> Response:
    """End a call that got no upstream stream, and answer with the error in the client's shape."""
    if isinstance(error, UpstreamRefused):
        failure = error.failure
        call.upstream_status = failure.status
        call.finish(Outcome.ERROR, failure.code)
        if failure.kind is FailureKind.CLIENT_ERROR:  # the client's own mistake: relay it
            return render(failure.status, failure.code, failure.message, request_id=call.request_id)
        code = _REFUSAL_CODES.get(failure.kind, "upstream_error")
        retry_after = failure.retry_after
        if code in ("upstream_rate_limited", "model_rate_limited") and retry_after is None:
            retry_after = runtime.settings.cooldown_fallback_s
        sub = SubLaneError(
            code, failure.message if code != "upstream_error" else None, retry_after=retry_after
        )
        if code == "upstream_error" and failure.status >= 500:
            sub.status = failure.status if failure.status in (502, 503, 504) else 502
        return render(
            sub.status, sub.code, sub.message, request_id=call.request_id, retry_after=sub.retry_after
        )
    assert isinstance(error, SubLaneError)
    call.finish(Outcome.REJECTED if error.status in (403, 404, 429) else Outcome.ERROR, error.code)
    return render(
        error.status, error.code, error.message, request_id=call.request_id, retry_after=error.retry_after
    )


def streaming_response(
    runtime: ClientRuntime,
    call: ModelCall,
    response: httpx.Response,
    observer: EventObserver,
    *,
    transform: Callable[[list[bytes]], bytes] | None = None,
    trailer: Callable[[], bytes] | None = None,
) -> StreamingResponse:
    """Relay the upstream stream to the client (transformed when given), with the call's limits."""
    settings = runtime.settings
    stream = relay_sse(
        call,
        response,
        observer,
        heartbeat_s=settings.sse_heartbeat_s,
        idle_timeout_s=settings.stream_idle_timeout_s,
        on_end=finish_call,
        transform=transform,
        trailer=trailer,
        deadline=call.started + settings.request_timeout_s,
    )
    headers = {"x-request-id": call.request_id} | SSE_HEADERS
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


async def relay_json(
    call: ModelCall,
    response: httpx.Response,
    render: ErrorRender,
    observe: Callable[[dict[str, Any]], None] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Relay an upstream JSON answer as it came and finish the call from what ``observe`` saw."""
    try:
        content = await response.aread()
    except httpx.HTTPError:
        await response.aclose()
        call.finish(Outcome.ERROR, "upstream_stream_error")
        return render(
            502, "upstream_stream_error", "The provider's answer broke off.", request_id=call.request_id
        )
    except BaseException:
        await response.aclose()
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    await response.aclose()
    try:
        payload = json.loads(content)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and observe is not None:
        observe(payload)
    outcome = call.state.outcome if call.state.outcome is not None else Outcome.SUCCESS
    call.finish(outcome, call.state.error_code if outcome is Outcome.ERROR else None)
    answer_headers = {"x-request-id": call.request_id, **(headers or {})}
    return Response(
        content, status_code=response.status_code, media_type="application/json", headers=answer_headers
    )
