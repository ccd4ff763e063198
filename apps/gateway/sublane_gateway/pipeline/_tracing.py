"""Traces of model requests (OPS-12), through the official OpenTelemetry SDK and its OTLP exporter.

On only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set; the
standard ``OTEL_*`` variables configure the rest (headers, timeout, service name, resource,
batching), read by the SDK itself. ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` (else
``OTEL_EXPORTER_OTLP_PROTOCOL``) chooses the exporter: ``http/protobuf`` (the default) or ``grpc``;
``http/json``, which no Python exporter speaks, or anything else stops start-up with a clear
message rather than being ignored. Off, nothing is imported and a request pays one ``is None``.

The spans of a request are made when it ends, from the times its :class:`ModelCall` noted (the
SDK takes explicit start and end times): one span per model request, with the request ID, client
protocol, provider, model, outcome, tokens and account id as attributes — never a name, e-mail,
prompt or key — and children for the queueing (arrival to a granted slot), the upstream call
(the slot to the accepted answer, with the first byte as an event; a failed-over request's
attempts counted) and the relay (the accepted answer to the end). A ``traceparent`` (and
``tracestate``) the client sent makes the request span its child.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["RequestTimes", "Tracing", "TracingRefused", "tracing_from_environment"]

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
PROTOCOLS = ("http/protobuf", "grpc")


class TracingRefused(ValueError):
    """The ``OTEL_*`` variables ask for an export SubLane cannot make (start-up stops, OPS-12)."""


def otlp_protocol() -> str:
    """The OTLP protocol the standard variables choose (the traces' own variable first)."""
    for name in _PROTOCOL_VARIABLES:
        value = os.environ.get(name, "").strip().lower()
        if value:
            if value not in PROTOCOLS:
                raise TracingRefused(
                    f"{name}={value!r} is not supported: SubLane exports traces over "
                    f"{' or '.join(repr(protocol) for protocol in PROTOCOLS)}"
                )
            return value
    return PROTOCOLS[0]


class RequestTimes(Protocol):
    """What a finished model call tells the tracer (a :class:`~sublane_gateway.pipeline.ModelCall`)."""

    request_id: str
    protocol: str
    operation: str
    provider: str | None
    model: str
    requested_model: str | None
    account_id: int | None
    upstream_status: int | None
    started: float  # monotonic
    started_wall: float
    granted_at: float | None
    accepted_at: float | None
    trace_headers: dict[str, str] | None
    attempts: list[dict[str, Any]] | None


class Tracing:
    """The tracer of one gateway process."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self._provider = provider
        self._tracer = provider.get_tracer("sublane.gateway")
        self._propagator = TraceContextTextMapPropagator()

    def shutdown(self) -> None:
        """Export what is left and stop (the app's lifespan end)."""
        self._provider.shutdown()

    def record(
        self,
        call: RequestTimes,
        now: float,
        outcome: str,
        error_code: str | None,
        tokens: tuple[int | None, int | None, int | None],
    ) -> None:
        """The spans of ``call``, which ended at monotonic ``now``."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        def wall_ns(monotonic: float) -> int:
            return int((call.started_wall + (monotonic - call.started)) * 1e9)

        parent = self._propagator.extract(call.trace_headers) if call.trace_headers else None
        attributes: dict[str, Any] = {
            "sublane.request_id": call.request_id,
            "sublane.protocol": call.protocol,
            "sublane.operation": call.operation,
            "sublane.model": call.requested_model or call.model,
            "sublane.served_model": call.model,
            "sublane.outcome": outcome,
        }
        optional = {
            "sublane.provider": call.provider,
            "sublane.account_id": call.account_id,
            "sublane.error_code": error_code,
            "sublane.upstream_status": call.upstream_status,
            "sublane.input_tokens": tokens[0],
            "sublane.output_tokens": tokens[1],
            "sublane.cached_tokens": tokens[2],
        }
        attributes.update({name: value for name, value in optional.items() if value is not None})
        span = self._tracer.start_span(
            "sublane.request", context=parent, kind=SpanKind.SERVER, attributes=attributes,
            start_time=wall_ns(call.started),
        )  # fmt: skip
        if outcome == "error":
            span.set_status(Status(StatusCode.ERROR, error_code or "error"))
        from opentelemetry.trace import set_span_in_context

        inside = set_span_in_context(span)
        granted = call.granted_at
        if granted is not None:
            self._tracer.start_span("sublane.queue", context=inside, start_time=wall_ns(call.started)).end(
                end_time=wall_ns(granted)
            )
            accepted = call.accepted_at
            upstream = self._tracer.start_span(
                "sublane.upstream", context=inside, kind=SpanKind.CLIENT, start_time=wall_ns(granted),
                attributes={"sublane.attempts": 1 + len(call.attempts or ())},
            )  # fmt: skip
            if accepted is not None:
                upstream.add_event("first_byte", timestamp=wall_ns(accepted))
                upstream.end(end_time=wall_ns(accepted))
                self._tracer.start_span("sublane.relay", context=inside, start_time=wall_ns(accepted)).end(
                    end_time=wall_ns(now)
                )
            else:
                upstream.end(end_time=wall_ns(now))
        span.end(end_time=wall_ns(now))


def tracing_from_environment() -> Tracing | None:
    """A :class:`Tracing` when an OTLP endpoint is configured; ``None`` (and no import) otherwise."""
    if not any(os.environ.get(name) for name in _ENDPOINTS):
        return None
    protocol = otlp_protocol()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by the SDK; "sublane" when neither names one
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    resource = Resource.create({} if named else {"service.name": "sublane"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(_exporter(protocol)))
    return Tracing(provider)


def _exporter(protocol: str) -> SpanExporter:
    """The SDK's OTLP exporter of ``protocol``; it reads its own ``OTEL_*`` variables."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()
