"""The one entry point of a model call over HTTP: intent → schedule → send with recovery → relay → finish.

A route reads its client protocol, authenticates the key and reads the body; then it calls
:func:`serve_call` with the principal. Everything after that is the same for every client protocol
and every provider: the pipeline picks the providers that can serve the call (same protocol, or a
translator from the client's), translates the request when needed, takes a slot, sends, and
relays the answer — bytes untouched when the protocols are equal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from sublane_core import (
    Outcome,
    SubLaneError,
    UpstreamOperation,
    WireProtocol,
    immutable,
    new_request_id,
    signals,
)
from sublane_gateway.pipeline._call import ModelCall
from sublane_gateway.pipeline._collect import collect_stream
from sublane_gateway.pipeline._failover import attempt_code, fails_over, move_on
from sublane_gateway.pipeline._group_models import aliased
from sublane_gateway.pipeline._identity import (
    CLIENT_VERSION_CODE,
    CallIdentity,
    tell_refused,
    too_old_message,
)
from sublane_gateway.pipeline._keys import Principal
from sublane_gateway.pipeline._level_suffix import has_level, resolve_level_suffix
from sublane_gateway.pipeline._relay import (
    JSON_KEEPALIVE,
    KEEPALIVE,
    Unwrapped,
    relay_json,
    stream_reply,
)
from sublane_gateway.pipeline._reply import JsonReply, Reply, error_reply, json_reply, sublane_error_reply
from sublane_gateway.pipeline._review import review_link
from sublane_gateway.pipeline._runtime import ClientRuntime
from sublane_gateway.pipeline._schedule import (
    check_policy,
    recheck_before_retry,
    schedule,
    selection_recheck,
    split_model,
    upstream_operation,
)
from sublane_gateway.pipeline._send import UpstreamRefused, send_with_recovery
from sublane_gateway.pipeline._translate import (
    ListingFailure,
    UpstreamBody,
    UpstreamShape,
    providers_listing,
    upstream_body,
    upstream_shape,
)
from sublane_protocols import (
    CallIntent,
    HubTranslator,
    ReframedStream,
    StreamTranslator,
    TranslationRefused,
    body_field_problem,
    cut_stream_ending,
    new_collector,
    read_intent,
    render_error,
    request_id_headers,
    translator_for,
)
from sublane_providers import Credentials, FailureKind, ProviderAdapter, UpstreamRequest, UpstreamResponse
from sublane_scheduler import Grant

# Enum members this module reads on every call, bound once: on Python 3.11 the enum class's
# __getattr__ sends every ``Enum.MEMBER`` read down CPython's slow attribute path (issue #49).
_JSON, _STREAM = UpstreamOperation.JSON, UpstreamOperation.STREAM

#: The operations that are a conversation's turns (COST-4): not token counts, not compactions.
_INFERENCES = frozenset({_STREAM, _JSON})


@immutable(kw_only=True)
class CallSpec:
    """A model call as a route received it."""

    protocol: WireProtocol  # the client's protocol
    body: dict[str, Any]
    headers: Mapping[str, str]  # the client's headers, looked up by lower-case name
    operation: UpstreamOperation | None = None  # None: an inference (stream or JSON, as the body asks)
    record_protocol: str  # ``protocol`` of the record (HIST-2)
    record_operation: str  # ``operation`` of the record
    json_array: bool = False  # stream as one JSON array (Gemini without ``alt=sse``), not SSE
    path_model: str | None = None  # the model named in the route (Gemini)
    arrived: tuple[float, float] | None = None  # (monotonic, wall) when the request arrived (HIST-5)


async def serve_call(runtime: ClientRuntime, principal: Principal, spec: CallSpec) -> Reply:
    """Serve one model call for ``principal``; every failure is answered in the client's shape."""
    protocol = spec.protocol
    try:
        intent = read_intent(protocol, spec.headers, spec.body, path_model=spec.path_model)
    except SubLaneError as error:
        return sublane_error_reply(protocol, error)
    problem = body_field_problem(protocol, spec.body)  # OPS-1: never forwarded, never a failure
    if problem is not None:
        return error_reply(protocol, 400, "invalid_request", problem[1], param=problem[0])
    prefix, model = split_model(intent.model, runtime.adapters)
    if has_level(model):  # gemini-3-pro(high) → gemini-3-pro-high (CAT-2, ALIAS-2)
        model = await resolve_level_suffix(runtime, principal, model)
    requested, model = await aliased(runtime, principal, model)
    operation = spec.operation or (_STREAM if intent.stream else _JSON)
    providers = runtime.serving(protocol, operation, prefix)
    if not providers:
        shown = f"{prefix}/{model}" if prefix else model
        if operation is UpstreamOperation.COMPACT:
            uncompactable = await _compaction_refused(runtime, principal, protocol, prefix, model)
            if uncompactable is not None:
                return uncompactable
        return error_reply(protocol, 404, "model_not_found", f"No account in your group serves {shown} here.")
    call = ModelCall.start(
        runtime.clock,
        runtime,
        new_request_id(),
        principal,
        model,
        spec.record_protocol,
        spec.record_operation,
        spec.arrived,
    )
    call.requested_model = requested
    call.trace(runtime.tracing, spec.headers)
    try:
        listing = await providers_listing(runtime, principal, model, providers)
    except BaseException:  # the client left while the catalogue was read (ADM-6)
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    if isinstance(listing, ListingFailure):  # recorded, against the account when it is its trouble
        call.provider, call.account_id = listing.provider, listing.account_id
        return refusal_reply(runtime, call, listing.error, protocol)
    if not listing and operation is UpstreamOperation.COMPACT:
        uncompactable = await _compaction_refused(
            runtime, principal, protocol, prefix, model, call.request_id
        )
        if uncompactable is not None:
            return uncompactable
    client_body = dict(spec.body, model=model)
    translated = _upstream_bodies(runtime, protocol, listing, client_body, operation)
    if isinstance(translated, TranslationRefused):  # a body validation failure: no record (HIST-1)
        return error_reply(
            protocol,
            400,
            translated.code,
            translated.message,
            param=translated.param,
            request_id=call.request_id,
        )
    bodies, refused = translated
    # Providers whose translation refused drop out; the others stay candidates for the scheduler,
    # which gives the answer for a model none lists (404, or the bound account's own error).
    if refused:  # rare: most calls translate for every listing provider, and skip this walk
        providers = tuple(name for name in providers if upstream_shape(runtime.adapters[name]) not in refused)
    identity = CallIdentity(runtime.client_versions, call, protocol, spec.headers)
    floored = _floored(runtime, identity, listing, model)
    if floored:  # CLIENT-3: a catalogue floor above what the call would carry: refused before any call
        if not set(listing) - floored.keys():
            return _floor_reply(runtime, call, identity, protocol, floored)
        providers = tuple(name for name in providers if name not in floored)
    opened = await _open(
        runtime, call, principal, spec, providers, bodies, client_body, operation, intent, identity
    )
    if isinstance(opened, JsonReply):
        return opened
    response, adapter, upstream = opened
    return await _relay(runtime, call, spec, adapter, response, operation, upstream.hub)


async def _compaction_refused(
    runtime: ClientRuntime,
    principal: Principal,
    protocol: WireProtocol,
    prefix: str | None,
    model: str,
    request_id: str | None = None,
) -> JsonReply | None:
    """XLAT-3: 400 ``unsupported_for_provider`` when no provider that compacts lists ``model``
    but one that cannot compact does (compaction is a Responses upstream's own state, never
    translated); ``None`` when no account serves the model at all (the 404 stays)."""
    others = runtime.serving(protocol, UpstreamOperation.JSON, prefix)
    serving = await providers_listing(runtime, principal, model, others) if others else ()
    if isinstance(serving, ListingFailure) or not serving:
        return None
    return error_reply(
        protocol,
        400,
        "unsupported_for_provider",
        f"Remote compaction is not available for {model!r}: the accounts that serve it "
        f"({', '.join(serving)}) cannot compact a conversation; compact it on the client instead.",
        request_id=request_id,
    )


def _floored(
    runtime: ClientRuntime, identity: CallIdentity, listing: tuple[str, ...], model: str
) -> dict[str, str]:
    """The providers whose catalogue names a floor for ``model`` above what the call would carry."""
    floors: dict[str, str] = {}
    for name in listing:
        floor = identity.floor_refused(runtime.adapters[name], model)
        if floor is not None:
            floors[name] = floor
    return floors


def _floor_reply(
    runtime: ClientRuntime,
    call: ModelCall,
    identity: CallIdentity,
    protocol: WireProtocol,
    floored: dict[str, str],
) -> JsonReply:
    """``client_version_too_old`` before any upstream call (CLIENT-3), recorded as ``client_version``."""
    provider, floor = next(iter(floored.items()))
    carried = identity.would_carry(runtime.adapters[provider])
    call.provider = provider
    call.finish(Outcome.CLIENT_VERSION, CLIENT_VERSION_CODE)
    tell_refused(provider, call.model, floor, carried, sender=runtime, request_id=call.request_id)
    message = too_old_message(provider, call.model, floor, carried)
    return error_reply(protocol, 400, CLIENT_VERSION_CODE, message, request_id=call.request_id)


def _upstream_bodies(
    runtime: ClientRuntime,
    protocol: WireProtocol,
    providers: tuple[str, ...],
    body: dict[str, Any],
    operation: UpstreamOperation,
) -> tuple[dict[UpstreamShape, UpstreamBody], set[UpstreamShape]] | TranslationRefused:
    """The request body in each upstream protocol and dialect the candidates speak, translated
    before any slot is taken (XLAT-3), and the shapes it cannot be translated to (they drop out);
    when none is left, the first refusal is the answer."""
    bodies: dict[UpstreamShape, UpstreamBody] = {}
    refused: set[UpstreamShape] = set()
    refusal: TranslationRefused | None = None
    for name in providers:
        adapter = runtime.adapters[name]
        shape = upstream_shape(adapter)
        if shape in bodies or (refused and shape in refused):  # (a shape's hash is a Python call)
            continue
        translator = translator_for(protocol, adapter.protocol)
        try:
            bodies[shape] = upstream_body(translator, body, operation, adapter.dialect)
        except TranslationRefused as error:
            refusal = refusal or error
            refused.add(shape)
    if not bodies and refusal is not None:
        return refusal
    return bodies, refused


async def _open(
    runtime: ClientRuntime,
    call: ModelCall,
    principal: Principal,
    spec: CallSpec,
    providers: tuple[str, ...],
    bodies: dict[UpstreamShape, UpstreamBody],
    client_body: dict[str, Any],
    operation: UpstreamOperation,
    intent: CallIntent,
    identity: CallIdentity,
) -> tuple[UpstreamResponse, ProviderAdapter, UpstreamBody] | JsonReply:
    """Policy, a slot and an accepted upstream response — or the error answer (the call finished).

    An unbound request whose attempt fails before any output for a reason of its account moves to
    another account (FAIL-1); the answer is the last attempt's when none serves it (FAIL-3).
    """
    try:
        check_policy(principal, call.model)
        review = review_link(spec.headers, spec.body)  # an auto-review child keys its own thread
        key = review.child_key if review is not None else intent.conversation_key
        parent_key = review.parent_key if review is not None else None
        if key is not None and operation in _INFERENCES:  # a turn of a conversation (COST-4)
            turns = runtime.cache_turns
            note = turns.begin(
                principal.group_id,
                key,
                call.model,
                spec.protocol,
                spec.body,
                continuation=intent.continuation,
            )
            call.note_turn(turns, note)
        call.queued_at = runtime.clock.monotonic()
        grant = await schedule(
            runtime,
            principal,
            providers,
            call.model,
            call.request_id,
            conversation_key=key,
            continuation=intent.continuation,
            parent_key=parent_key,
        )
    except SubLaneError as error:
        return refusal_reply(runtime, call, error, spec.protocol)
    except BaseException:
        call.finish(Outcome.CANCELED, "client_canceled")
        raise
    call.take(grant)
    while True:
        try:
            return await _attempt(
                runtime, call, principal, spec, grant, bodies, client_body, operation, key, identity
            )
        except (SubLaneError, UpstreamRefused) as error:
            moved = (
                await move_on(
                    runtime,
                    call,
                    grant,
                    attempt_code(error),
                    selection_recheck(runtime, principal, call.model),
                    providers=providers,
                    conversation_key=key,
                    continuation=intent.continuation,
                    parent_key=parent_key,
                )
                if fails_over(error)
                else None
            )
            if moved is None:
                return refusal_reply(runtime, call, error, spec.protocol)
            grant = moved
        except TranslationRefused as refused:
            call.finish(Outcome.REJECTED, refused.code)
            return error_reply(spec.protocol, 400, refused.code, refused.message, param=refused.param)
        except BaseException:
            call.finish(Outcome.CANCELED, "client_canceled")
            raise


async def _attempt(
    runtime: ClientRuntime,
    call: ModelCall,
    principal: Principal,
    spec: CallSpec,
    grant: Grant,
    bodies: dict[UpstreamShape, UpstreamBody],
    client_body: dict[str, Any],
    operation: UpstreamOperation,
    key: str | None,
    identity: CallIdentity,
) -> tuple[UpstreamResponse, ProviderAdapter, UpstreamBody] | JsonReply:
    """One attempt on ``grant``'s account: the upstream's accepted response (or an estimated count)."""
    account = grant.account
    adapter = runtime.adapters[account.provider]
    shape = upstream_shape(adapter)
    upstream = bodies.get(shape)
    if upstream is None:  # the model appeared on this provider meanwhile: translate now
        translator = translator_for(spec.protocol, adapter.protocol)
        upstream = upstream_body(translator, client_body, operation, adapter.dialect)
        bodies[shape] = upstream
    if upstream.body is None:  # a token count this upstream cannot do: estimated, no call
        return _estimated_count(call, spec.protocol, upstream)
    body = upstream.body
    if call.cache_note is not None:
        call.cache_lifetime_s = adapter.cache_lifetime_s(body)
    wanted = upstream_operation(adapter, operation, translated=adapter.protocol != spec.protocol)
    bound = key is not None

    def build(credentials: Credentials) -> UpstreamRequest:
        # CLIENT-1: the client's identity or SubLane's (always on a recovery probe, COOL-4)
        probe = runtime.scheduler.cooldowns.probe_only(account.id, call.model)
        headers = identity.headers_for(adapter, probe=probe)
        return adapter.build_request(
            wanted, credentials.bundle, body, headers, bound=bound, conversation_key=key
        )

    async def recheck() -> None:
        await recheck_before_retry(runtime, principal, account, call.model)

    call.sent_at = runtime.clock.monotonic()
    response, _credentials = await send_with_recovery(runtime, grant, build, recheck, identity)
    call.upstream_status = response.status_code
    call.accepted_at = runtime.clock.monotonic()
    _observe_quota(runtime, adapter, account.id, account.lifecycle_revision, response)
    return response, adapter, upstream


def _estimated_count(call: ModelCall, protocol: WireProtocol, upstream: UpstreamBody) -> JsonReply:
    translator = translator_for(protocol, WireProtocol.RESPONSES)
    assert translator is not None and upstream.hub is not None
    call.finish(Outcome.SUCCESS)
    answer = translator.estimated_count_answer(upstream.hub)
    return json_reply(answer, headers=request_id_headers(protocol, call.request_id))


def _observe_quota(
    runtime: ClientRuntime,
    adapter: ProviderAdapter,
    account_id: int,
    revision: int,
    response: UpstreamResponse,
) -> None:
    if not signals.quota_observed.has_receivers:
        return
    now = runtime.clock.time()
    plan, windows = adapter.quota_from_headers(response.headers, now)
    if windows:
        signals.quota_observed.send(
            signals.QuotaObserved(
                account_id=account_id,
                lifecycle_revision=revision,
                observed_at=now,
                plan=plan,
                windows=windows,
            ),
            sender=runtime,
        )


def native_reply_headers(adapter: ProviderAdapter, response: UpstreamResponse) -> dict[str, str]:
    """The answer's headers the adapter's own clients read (``native_reply_header_prefixes``),
    by lower-case name, their bytes unchanged (CLIENT-5)."""
    prefixes = tuple(prefix.encode("latin-1") for prefix in adapter.native_reply_header_prefixes)
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for _raw, name, value in response.headers.triples
        if name.startswith(prefixes)
    }


async def _relay(
    runtime: ClientRuntime,
    call: ModelCall,
    spec: CallSpec,
    adapter: ProviderAdapter,
    response: UpstreamResponse,
    operation: UpstreamOperation,
    hub: dict[str, Any] | None,
) -> Reply:
    """``hub``: the call's body in the hub's form, when it was translated (not derived again)."""
    protocol = spec.protocol
    translator = translator_for(protocol, adapter.protocol)
    created = int(runtime.clock.time())
    observer = adapter.new_observer(call.state)
    unwrap = runtime.unwrappers[adapter.name]
    if operation is _STREAM:
        frames: StreamTranslator | None
        if translator is not None:
            frames = translator.new_stream(
                spec.body, model=call.model, created=created, json_array=spec.json_array, hub=hub
            )
            if unwrap is not None:
                frames = Unwrapped(unwrap, frames)
        elif unwrap is not None or spec.json_array:
            frames = ReframedStream(unwrap or _as_is, _stream_error(protocol), json_array=spec.json_array)
        else:
            frames = None  # the diagonal: bytes untouched (and the protocol's error ending if cut)
        reply = stream_reply(
            runtime,
            call,
            response,
            observer,
            frames,
            cut_ending=partial(cut_stream_ending, protocol),
            keepalive=JSON_KEEPALIVE if spec.json_array else KEEPALIVE,
        )
        if translator is None and adapter.native_reply_header_prefixes:
            reply.headers.update(native_reply_headers(adapter, response))
        if spec.json_array:
            return dataclasses.replace(reply, media_type="application/json")
        return reply
    headers = request_id_headers(protocol, call.request_id)
    if translator is None and adapter.native_reply_header_prefixes:
        headers = {**headers, **native_reply_headers(adapter, response)}
    headers["server-timing"] = call.server_timing()
    translated = translator is not None and operation is not UpstreamOperation.COUNT_TOKENS
    if upstream_operation(adapter, operation, translated=translated) is _STREAM:
        # A JSON answer, collected from a stream: in the upstream's protocol, or (translated)
        # through the hub into one Responses object, then into the client's shape.
        if translator is not None:
            collector = translator.new_collector(spec.body, model=call.model, hub=hub)
            final = await collect_stream(
                call, response, observer, collector, runtime.settings.request_timeout_s, unwrap=unwrap,
                watch=runtime.watch_of(adapter.name),
            )  # fmt: skip
            if final is None:
                return stream_failure_reply(call, protocol)
            answer = translator.client_side.answer_from_responses(final, model=call.model, created=created)
            return json_reply(answer, headers=headers)
        final = await collect_stream(
            call, response, observer, new_collector(adapter.protocol), runtime.settings.request_timeout_s,
            watch=runtime.watch_of(adapter.name),
        )  # fmt: skip
        if final is None:
            return stream_failure_reply(call, protocol)
        return json_reply(final, headers=headers)
    observe = None if operation is UpstreamOperation.COUNT_TOKENS else observer.observe_answer
    if translator is not None and operation is UpstreamOperation.COUNT_TOKENS:
        unwrap = _count_answer(translator, unwrap)
    return await relay_json(
        call,
        response,
        protocol,
        observe,
        headers=headers,
        unwrap=unwrap,
        deadline=call.started + runtime.settings.request_timeout_s,
        idle_timeout_s=runtime.settings.stream_idle_timeout_s,
        watch=runtime.watch_of(adapter.name),
    )


def _count_answer(
    translator: HubTranslator, unwrap: Callable[[dict[str, Any]], dict[str, Any]] | None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The upstream's count answer, unwrapped, in the client's shape."""

    def answer(payload: dict[str, Any]) -> dict[str, Any]:
        return translator.count_answer(unwrap(payload) if unwrap is not None else payload)

    return answer


def _as_is(payload: dict[str, Any]) -> dict[str, Any]:
    """An event of an upstream that does not wrap its events, as it is (JSON-array reframing)."""
    return payload


def _stream_error(protocol: WireProtocol) -> Callable[[str], dict[str, Any]]:
    """The body of an error element for a stream of ``protocol`` that broke off."""

    def body(code: str) -> dict[str, Any]:
        return render_error(
            protocol, 502, code, "The upstream stream ended before the answer was complete."
        ).body

    return body


def stream_failure_reply(call: ModelCall, protocol: WireProtocol) -> JsonReply:
    """The error answer for a non-streaming caller whose upstream stream failed."""
    state = call.state
    code = state.error_code or "upstream_stream_error"
    message = state.error_message or "The upstream stream ended without a response."
    return error_reply(
        protocol, 504 if code == "request_timeout" else 502, code, message, request_id=call.request_id
    )


_REFUSAL_CODES = {
    FailureKind.RATE_LIMITED: "upstream_rate_limited",
    FailureKind.QUOTA_EXHAUSTED: "quota_exhausted",
    FailureKind.MODEL_RATE_LIMITED: "model_rate_limited",
    FailureKind.FORBIDDEN: "upstream_forbidden",
    FailureKind.UNAUTHORIZED: "reauth_required",
}


def refusal_reply(
    runtime: ClientRuntime, call: ModelCall, error: Exception, protocol: WireProtocol
) -> JsonReply:
    """End a call that got no upstream stream, and answer with the error in the client's shape."""
    if isinstance(error, UpstreamRefused):
        failure = error.failure
        call.upstream_status = failure.status
        if failure.kind is FailureKind.CLIENT_VERSION:  # CLIENT-3: the client's version, no failure
            call.finish(Outcome.CLIENT_VERSION, CLIENT_VERSION_CODE)
            return error_reply(
                protocol, 400, CLIENT_VERSION_CODE, failure.message, request_id=call.request_id
            )
        call.finish(Outcome.ERROR, failure.code)
        if failure.kind is FailureKind.CLIENT_ERROR:  # the client's own mistake: relay it
            return error_reply(
                protocol,
                failure.status,
                failure.code,
                failure.message,
                request_id=call.request_id,
                param=failure.param,
            )
        code = _REFUSAL_CODES.get(failure.kind, "upstream_error")
        retry_after = failure.retry_after
        if code in ("upstream_rate_limited", "model_rate_limited") and retry_after is None:
            retry_after = runtime.settings.cooldown_fallback_s
        sub = SubLaneError(
            code, failure.message if code != "upstream_error" else None, retry_after=retry_after
        )
        if code == "upstream_error" and failure.status >= 500:
            sub.status = failure.status if failure.status in (502, 503, 504) else 502
        return sublane_error_reply(protocol, sub, call.request_id)
    assert isinstance(error, SubLaneError)
    if call.routing is None:
        call.routing = error.routing  # refused during routing: what routing decided (HIST-12)
    call.finish(Outcome.REJECTED if error.status in (403, 404, 429) else Outcome.ERROR, error.code)
    return sublane_error_reply(protocol, error, call.request_id)
