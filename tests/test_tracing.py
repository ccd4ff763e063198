"""Traces (OPS-12): a loopback OTLP/HTTP receiver decodes what the gateway exports (protobuf, with
``opentelemetry-proto``) and checks the span tree, the attributes, the client's ``traceparent``,
and that no secret is in any of it; without an endpoint nothing is exported at all."""

from __future__ import annotations

import gzip
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from gateway_pool import Pool
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from sublane_sim import Behaviour

BODY = {"model": "gpt-5-codex", "input": "the secret prompt SENTINEL-7", "stream": True}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Receiver:
    """OTLP/HTTP ``POST /v1/traces``: every exported span, decoded."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.raw: list[bytes] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                owner.raw.append(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        owner.spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[Any]:
        deadline = time.monotonic() + timeout_s
        while len(self.spans) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.spans)


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    running = Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # a standard variable: export within 50 ms
    monkeypatch.setenv("OTEL_SERVICE_NAME", "sublane-test")
    yield running
    running.server.shutdown()
    running.server.server_close()


def _attributes(span: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        values[attribute.key] = getattr(value, value.WhichOneof("value"))
    return values


def test_ops_12_each_request_is_a_span_with_queue_upstream_and_relay_children(
    receiver: Receiver, make_pool: Callable[..., Pool]
) -> None:
    pool = make_pool()
    pool.sim.script(pool.sim_accounts[0].id, Behaviour.ok(input_tokens=12, output_tokens=5, cached_tokens=4))
    traceparent = f"00-{TRACE_ID}-{PARENT_ID}-01"
    answer = pool.client().post("/v1/responses", json=BODY, headers={"traceparent": traceparent})
    assert answer.status_code == 200
    spans = receiver.wait_for(4)
    by_name = {span.name: span for span in spans}
    assert set(by_name) == {"sublane.request", "sublane.queue", "sublane.upstream", "sublane.relay"}
    request = by_name["sublane.request"]
    assert request.trace_id.hex() == TRACE_ID and request.parent_span_id.hex() == PARENT_ID  # the client's
    for child in ("sublane.queue", "sublane.upstream", "sublane.relay"):
        assert (
            by_name[child].parent_span_id == request.span_id and by_name[child].trace_id == request.trace_id
        )
    attributes = _attributes(request)
    assert attributes["sublane.request_id"] == answer.headers["x-request-id"]
    assert attributes["sublane.protocol"] == "responses" and attributes["sublane.provider"] == "codex"
    assert attributes["sublane.model"] == "gpt-5-codex" and attributes["sublane.outcome"] == "success"
    assert attributes["sublane.account_id"] == pool.account_ids[0]
    assert attributes["sublane.input_tokens"] == 12 and attributes["sublane.output_tokens"] == 5
    upstream = by_name["sublane.upstream"]
    assert [event.name for event in upstream.events] == ["first_byte"]
    assert request.start_time_unix_nano <= by_name["sublane.queue"].start_time_unix_nano
    assert by_name["sublane.relay"].end_time_unix_nano <= request.end_time_unix_nano
    exported = b"".join(receiver.raw)
    account = pool.sim_accounts[0]
    for secret in (b"SENTINEL-7", pool.key.encode(), account.access_token.encode(), account.email.encode(),
                   b"codex-1"):  # fmt: skip
        assert secret not in exported


def test_ops_12_a_refused_request_is_traced_with_its_error(
    receiver: Receiver, make_pool: Callable[..., Pool]
) -> None:
    pool = make_pool()
    pool.sim.script(
        pool.sim_accounts[0].id, Behaviour.error(429, error_code="rate_limit_exceeded", retry_after="9")
    )
    assert pool.client().post("/v1/responses", json=BODY).status_code == 429
    spans = receiver.wait_for(3)
    request = next(span for span in spans if span.name == "sublane.request")
    attributes = _attributes(request)
    assert attributes["sublane.outcome"] == "error" and attributes["sublane.upstream_status"] == 429
    assert request.status.code == 2  # STATUS_CODE_ERROR
    assert "sublane.relay" not in {span.name for span in spans}


def test_ops_12_nothing_is_traced_when_no_endpoint_is_set(
    make_pool: Callable[..., Pool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    pool = make_pool()
    assert pool.runtime.tracing is None
    assert pool.client().post("/v1/responses", json=BODY).status_code == 200


class GrpcReceiver:
    """A real OTLP/gRPC trace receiver on loopback: grpcio's server with the collector service of
    ``opentelemetry-proto``; every exported span, decoded."""

    def __init__(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        self.spans: list[Any] = []
        owner = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: Any, context: Any) -> Any:
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        owner.spans.extend(scope.spans)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.url = f"http://127.0.0.1:{port}"

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[Any]:
        deadline = time.monotonic() + timeout_s
        while len(self.spans) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.spans)


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"])
def test_ops_12_otlp_over_grpc_reaches_a_grpc_receiver(
    make_pool: Callable[..., Pool], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    running = GrpcReceiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
        monkeypatch.setenv(variable, "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        pool = make_pool()
        answer = pool.client().post("/v1/responses", json=BODY)
        assert answer.status_code == 200
        spans = running.wait_for(4)
        assert {span.name for span in spans} == {
            "sublane.request", "sublane.queue", "sublane.upstream", "sublane.relay"
        }  # fmt: skip
        request = next(span for span in spans if span.name == "sublane.request")
        assert _attributes(request)["sublane.request_id"] == answer.headers["x-request-id"]
    finally:
        running.server.stop(grace=None)


def test_ops_12_an_otlp_protocol_sublane_cannot_speak_stops_start_up(tmp_path: Path) -> None:
    from test_cli import SUBLANE, _env

    env = _env(
        tmp_path / "data",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/json",
    )
    done = subprocess.run(
        [SUBLANE, "serve", "--port", "0"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='http/json' is not supported" in done.stderr, done.stderr
    assert "'grpc'" in done.stderr
