"""What Codex-served calls need beyond the shared steps: the upstream request, and aggregation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import Response

from sublane_gateway.client._bodies import conversation_key
from sublane_gateway.client._call import ModelCall
from sublane_gateway.client._calls import Upstream, finish_call
from sublane_gateway.client._openai_errors import openai_error_response
from sublane_providers import Outcome, ProviderAdapter, SseFramer, parse_event
from sublane_providers.codex import CodexAdapter, CodexStreamObserver


def codex_upstream(request: Request, body: dict[str, Any], model: str, *, compact: bool = False) -> Upstream:
    """A Responses (or compaction) call on a Codex account, for ``body`` as the client sent it."""
    client_headers = dict(request.headers)
    prepared = dict(body, model=model)

    def build(adapter: ProviderAdapter, bundle: Mapping[str, Any], bound: bool) -> httpx.Request:
        if not compact:
            return adapter.stream_request(bundle, prepared, client_headers, bound=bound)
        assert isinstance(adapter, CodexAdapter)
        return adapter.compact_request(bundle, prepared, client_headers, bound=bound)

    return Upstream(
        provider="codex",
        conversation_key=conversation_key(request.headers, body),
        continuation=bool(body.get("previous_response_id")),
        build=build,
    )


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
