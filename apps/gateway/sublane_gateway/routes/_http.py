"""What every HTTP model route does: read the key and the body, call the pipeline, answer."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from sublane_core import SubLaneError, UpstreamOperation, WireProtocol
from sublane_gateway._proxy import client_address
from sublane_gateway.pipeline import CallSpec, client_runtime, serve_call, sublane_error_reply
from sublane_gateway.routes._bodies import read_json_object
from sublane_gateway.routes._replies import ClientWatch, to_response

#: The Messages protocol's beta list, which a client may spread over several header lines.
_BETAS = "anthropic-beta"
_BETAS_RAW = _BETAS.encode()


def headers_by_name(connection: HTTPConnection) -> dict[str, str]:
    """A request's or WebSocket's headers by (lower-case) name; of a repeated one the first, as
    Starlette's ``Headers.get`` reads it (``anthropic-beta``: all of them, joined). A plain dict:
    the pipeline looks up a dozen names a call, most of them absent, and ``Headers`` scans its
    list and raises ``KeyError`` for each miss (issue #19)."""
    raw = connection.scope["headers"]
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}
    if _BETAS in headers:  # a list header: every line counts, joined as HTTP folds them (CLIENT-4)
        lines = [value.decode("latin-1") for name, value in raw if name == _BETAS_RAW]
        if len(lines) > 1:
            headers[_BETAS] = ",".join(lines)
    return headers


async def serve_http(
    request: Request,
    protocol: WireProtocol,
    *,
    record_protocol: str,
    record_operation: str,
    operation: UpstreamOperation | None = None,
    headers: Mapping[str, str] | None = None,
    path_model: str | None = None,
    json_array: bool = False,
    query_keys: Sequence[str] = (),
) -> Response:
    """Authenticate, read the JSON body and serve the call; errors in ``protocol``'s shape.

    ``headers`` replace the request's own (the Gemini routes add a ``key=`` query parameter);
    the key is read from every copy of the request's own headers and ``query_keys``, which must agree.
    """
    runtime = client_runtime(request)
    clock = runtime.clock
    arrived = (clock.monotonic(), clock.time())  # the record's clock starts here (HIST-5)
    client_headers = headers_by_name(request) if headers is None else headers
    try:
        principal = await runtime.keys.authenticate(
            request.scope["headers"], query_keys, address=client_address(request)
        )
        body, _raw = await read_json_object(request, client_headers)
    except SubLaneError as error:
        return to_response(sublane_error_reply(protocol, error))
    spec = CallSpec(
        protocol=protocol,
        body=body,
        headers=client_headers,
        operation=operation,
        record_protocol=record_protocol,
        record_operation=record_operation,
        path_model=path_model,
        json_array=json_array,
        arrived=arrived,
    )
    watch = ClientWatch(request.receive)  # ADM-6: a client that leaves ends its call, whatever its shape
    watch.waiting = True
    try:
        reply = await serve_call(runtime, principal, spec)
    except asyncio.CancelledError:
        watch.close()
        if not watch.delivered():
            raise
        return to_response(sublane_error_reply(protocol, SubLaneError("invalid_request", _LEFT)))
    except BaseException:
        watch.close()
        raise
    watch.waiting = False
    return to_response(reply, watch)


_LEFT = "The client closed the connection."  # nobody reads it: the answer goes nowhere
