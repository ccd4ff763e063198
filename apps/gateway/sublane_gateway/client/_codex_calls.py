"""The steps every Codex-served client call shares: prepare, open upstream, refuse, finish."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from sublane_core import SubLaneError, new_request_id, signals
from sublane_gateway.client._bodies import conversation_key, read_json_object, require_model
from sublane_gateway.client._call import ModelCall
from sublane_gateway.client._dispatch import (
    UpstreamRefused,
    check_policy,
    schedule,
    send_with_recovery,
    split_model,
)
from sublane_gateway.client._keys import Principal
from sublane_gateway.client._openai_errors import from_sublane_error, openai_error_response
from sublane_gateway.client._relay import relay_sse
from sublane_gateway.client._runtime import ClientRuntime, client_runtime
from sublane_providers import Credentials, Outcome, SseFramer, parse_event
from sublane_providers.codex import (
    CodexStreamObserver,
    compact_body,
    responses_body,
    upstream_headers,
    windows_from_headers,
)

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def finish_call(call: ModelCall) -> None:
    """Finish a call from what its stream showed: terminal outcome, or an error when none came."""
    state = call.state
    outcome = state.outcome or Outcome.ERROR
    error_code = state.error_code if outcome in (Outcome.ERROR, Outcome.CANCELED) else None
    if state.outcome is None and error_code is None:
        error_code = "stream_incomplete"  # ended without a terminal event (MCOOL-1)
    call.finish(outcome, error_code)


def _observe_quota(runtime: ClientRuntime, account_id: int, revision: int, response: httpx.Response) -> None:
    if not signals.quota_observed.has_receivers:
        return
    now = runtime.clock.time()
    plan, windows = windows_from_headers(response.headers, now)
    if windows:
        signals.quota_observed.send(signals.QuotaObserved(account_id, revision, now, plan, windows))


async def open_codex(
    runtime: ClientRuntime,
    request: Request,
    call: ModelCall,
    principal: Principal,
    body: dict[str, Any],
    *,
    url: str,
    compact: bool,
) -> httpx.Response:
    """Select a Codex account, take its slot and get an accepted upstream response."""
    key = conversation_key(request.headers, body)
    grant = await schedule(
        runtime,
        principal,
        "codex",
        call.model,
        call.request_id,
        conversation_key=key,
        continuation=bool(body.get("previous_response_id")),
    )
    call.grant, call.routing = grant, grant.routing
    account = grant.account
    call.provider, call.account_id = "codex", account.id
    bound = key is not None
    payload = (compact_body if compact else responses_body)(body, model=call.model)
    content = json.dumps(payload, separators=(",", ":")).encode()
    client_headers = dict(request.headers)

    def build(credentials: Credentials) -> httpx.Request:
        token, account_id = runtime.codex.access(credentials.bundle)
        headers = upstream_headers(client_headers, access_token=token, account_id=account_id, bound=bound)
        headers["content-type"] = "application/json"
        headers["accept"] = "application/json" if compact else "text/event-stream"
        return runtime.http.build_request("POST", url, content=content, headers=headers)

    async def recheck() -> None:
        current = await runtime.keys.authenticate_again(principal)
        check_policy(current, call.model)
        cooldown = runtime.scheduler.cooldowns.blocking(account.id, call.model)
        if cooldown is not None or runtime.vault.needs_reauth(account.id):
            raise SubLaneError("no_account_available", "The account became unavailable during retries.")

    response, _credentials = await send_with_recovery(runtime, grant, build, recheck)
    call.upstream_status = response.status_code
    _observe_quota(runtime, account.id, account.lifecycle_revision, response)
    return response


async def open_or_refuse(
    runtime: ClientRuntime,
    request: Request,
    call: ModelCall,
    principal: Principal,
    body: dict[str, Any],
    *,
    url: str,
    compact: bool,
) -> httpx.Response | Response:
    """Policy, scheduling and the upstream call: the accepted upstream response, or the error answer."""
    try:
        check_policy(principal, call.model)
        return await open_codex(runtime, request, call, principal, body, url=url, compact=compact)
    except (SubLaneError, UpstreamRefused) as error:
        return refusal_response(runtime, call, error)
    except BaseException:
        call.finish(Outcome.CANCELED, "client_canceled")
        raise


def streaming_response(
    runtime: ClientRuntime,
    call: ModelCall,
    response: httpx.Response,
    *,
    transform: Callable[[list[bytes]], bytes] | None = None,
    trailer: Callable[[], bytes] | None = None,
) -> StreamingResponse:
    """Relay the upstream stream to the client (transformed when given), with the call's limits."""
    settings = runtime.settings
    stream = relay_sse(
        call,
        response,
        CodexStreamObserver(call.state),
        heartbeat_s=settings.sse_heartbeat_s,
        idle_timeout_s=settings.stream_idle_timeout_s,
        on_end=finish_call,
        transform=transform,
        trailer=trailer,
        deadline=call.started + settings.request_timeout_s,
    )
    headers = {"x-request-id": call.request_id} | SSE_HEADERS
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


async def prepare_call(
    request: Request, protocol: str, operation: str
) -> tuple[ClientRuntime, Principal, dict[str, Any], ModelCall]:
    """Authenticate, read the body and start the call's bookkeeping."""
    runtime = client_runtime(request)
    principal = await runtime.keys.authenticate(request.headers)
    body, _raw = await read_json_object(request)
    provider, model = split_model(require_model(body))
    if provider not in (None, "codex"):
        raise SubLaneError(
            "model_not_found", f"No account in your group serves {provider}/{model} over Responses."
        )
    call = ModelCall.start(runtime.clock, new_request_id(), principal, model, protocol, operation)
    return runtime, principal, body, call


def refusal_response(runtime: ClientRuntime, call: ModelCall, error: Exception) -> Response:
    """End a call that got no upstream stream, in OpenAI's error shape."""
    if isinstance(error, UpstreamRefused):
        failure = error.failure
        call.upstream_status = failure.status
        call.finish(Outcome.ERROR, failure.code)
        status = failure.status if failure.kind.value == "client_error" else None
        if status is not None:
            return openai_error_response(status, failure.code, failure.message, request_id=call.request_id)
        spec_code = {
            "rate_limited": "upstream_rate_limited",
            "quota_exhausted": "upstream_rate_limited",
            "forbidden": "upstream_forbidden",
            "unauthorized": "reauth_required",
        }.get(failure.kind.value, "upstream_error")
        retry_after = failure.retry_after
        if spec_code == "upstream_rate_limited" and retry_after is None:
            retry_after = runtime.settings.cooldown_fallback_s
        sub = SubLaneError(
            spec_code, failure.message if spec_code != "upstream_error" else None, retry_after=retry_after
        )
        if spec_code == "upstream_error" and failure.status >= 500:
            sub.status = failure.status if failure.status in (502, 503, 504) else 502
        return from_sublane_error(sub, call.request_id)
    assert isinstance(error, SubLaneError)
    outcome = Outcome.REJECTED if error.status in (403, 404, 429) else Outcome.ERROR
    call.finish(outcome, error.code)
    return from_sublane_error(error, call.request_id)


async def collect_final(call: ModelCall, response: httpx.Response, deadline: float) -> dict[str, Any] | None:
    """Read the whole stream; the final response object (output back-filled), or ``None`` on failure.

    The call is finished here. Used for callers that did not ask for a stream.
    """
    observer = CodexStreamObserver(call.state)
    framer = SseFramer()
    final: dict[str, Any] | None = None
    items: list[Any] = []
    try:
        async with asyncio.timeout(max(0.0, deadline - call.clock.monotonic())):
            async for chunk in response.aiter_raw():
                for block in framer.feed(chunk):
                    event = parse_event(block)
                    if event.data is None:
                        continue
                    try:
                        payload = json.loads(event.data)
                    except ValueError:
                        continue
                    if not isinstance(payload, dict):
                        continue
                    observer.observe_payload(payload)
                    call.note_output()
                    kind = payload.get("type")
                    if kind == "response.output_item.done":
                        items.append(payload.get("item"))
                    elif kind in ("response.completed", "response.incomplete", "response.failed"):
                        final = payload.get("response") if isinstance(payload.get("response"), dict) else None
    except httpx.HTTPError:
        call.state.error_code = "upstream_stream_error"
    except TimeoutError:
        call.state.outcome, call.state.error_code = Outcome.ERROR, "request_timeout"
    except BaseException:
        await response.aclose()
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    await response.aclose()
    state = call.state
    finish_call(call)
    if state.outcome in (Outcome.SUCCESS, Outcome.INCOMPLETE) and final is not None:
        if not final.get("output"):
            final["output"] = [item for item in items if item is not None]
        return final
    return None


def stream_failure_response(call: ModelCall) -> Response:
    """The error answer for a non-streaming caller whose upstream stream failed."""
    state = call.state
    code = state.error_code or "upstream_stream_error"
    message = state.error_message or "The upstream stream ended without a response."
    return openai_error_response(
        504 if code == "request_timeout" else 502, code, message, request_id=call.request_id
    )
