"""``GET /metrics``: the gateway in Prometheus' text format (OPS-8).

Two kinds of numbers:

- **Counted per call.** :class:`CallCounters` receives ``request_finished`` (sent once per model
  attempt, on the event loop) and adds it up in plain dictionaries: calls by outcome, provider,
  protocol and operation; the upstream status each call ended with; duration and first-output
  histograms. No lock, no label lookup in a client library, no thread hop: a few dictionary
  updates per call (priced in BENCHMARKS.md, S1 with metrics on and off).
- **Read at scrape time.** Everything else is state the gateway holds anyway, read when Prometheus
  asks: workspace capacity, in-flight and limit per account, waiters per group and per account,
  account state, cooldowns and limited models, the latest quota observations, the history
  recorder's backlog and losses. The per-account part is the runtime view of SPEC §14 (the same
  code builds both).

Accounts and groups appear by ID and provider only: no name, e-mail, model alias of a person, key
or credential is ever a label. Readable with an admin session or
``Authorization: Bearer $SUBLANE_METRICS_TOKEN``.
"""

from __future__ import annotations

import hmac
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from starlette.responses import Response

from sublane_core import SubLaneError, signals
from sublane_gateway._sessions import DbSession, admin_user, current_user
from sublane_gateway._state import gateway_state
from sublane_gateway.management._runtime_view import load_accounts, runtime_accounts
from sublane_gateway.pipeline import client_runtime
from sublane_history import HistoryRecorder

router = APIRouter(tags=["operations"])

# Seconds. Model calls run from well under a second (count_tokens) to 30 minutes (ADM-9).
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
FIRST_OUTPUT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)
ACCOUNT_STATES = (
    "ready",
    "busy",
    "cooling",
    "model_limited",
    "quota_exhausted",
    "refresh_backoff",
    "reauth_required",
    "disabled",
)
#: OPS-13's parts of the time before the first byte: queueing, the upstream, SubLane's own.
PART_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
NO_PROVIDER = "none"  # calls refused before an account was chosen


class Histogram:
    """Bucket counts and a sum; ``observe`` is a bisect and two additions."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # le: a value on a bound belongs to it
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative ``(le, count)`` pairs, ending with ``+Inf``."""
        result, running = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            result.append((bound, float(running)))
        return result


class TimeParts:
    """OPS-13's three histograms of one provider, observed together (seconds)."""

    __slots__ = ("queue", "sublane", "upstream")

    def __init__(self) -> None:
        self.queue, self.upstream, self.sublane = (Histogram(PART_BUCKETS) for _ in range(3))

    def observe(self, timing: dict[str, int]) -> None:
        queue, sublane = timing["queue_ms"] / 1000, timing["sublane_ms"] / 1000
        upstream = timing["first_byte_ms"] / 1000 - queue - sublane
        for histogram, value in ((self.queue, queue), (self.upstream, upstream), (self.sublane, sublane)):
            histogram.counts[bisect_left(PART_BUCKETS, value)] += 1
            histogram.total += value


class CallCounters:
    """Finished model calls, added up on the event loop (the ``request_finished`` receiver)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str, str], int] = {}
        self.upstream: dict[tuple[str, str], int] = {}
        self.duration: dict[tuple[str, str], Histogram] = {}
        self.first_output: dict[tuple[str, str], Histogram] = {}
        # OPS-13, by provider: queue, upstream to its first byte, SubLane's own time before it
        self.parts: dict[str, TimeParts] = {}

    def record(self, payload: signals.RequestFinished) -> None:
        provider = payload.provider or NO_PROVIDER
        key = (str(payload.outcome), provider, payload.protocol, payload.operation)
        self.requests[key] = self.requests.get(key, 0) + 1
        if payload.upstream_status is not None:
            status = (provider, str(payload.upstream_status))
            self.upstream[status] = self.upstream.get(status, 0) + 1
        route = (provider, payload.protocol)
        duration = self.duration.get(route)
        if duration is None:
            duration = self.duration[route] = Histogram(DURATION_BUCKETS)
        duration.observe(payload.duration_ms / 1000)
        if payload.first_token_ms is not None:
            first = self.first_output.get(route)
            if first is None:
                first = self.first_output[route] = Histogram(FIRST_OUTPUT_BUCKETS)
            first.observe(payload.first_token_ms / 1000)
        timing = payload.timing
        if timing is not None:
            parts = self.parts.get(provider)
            if parts is None:
                parts = self.parts[provider] = TimeParts()
            parts.observe(timing)

    def families(self) -> Iterator[Any]:
        requests = CounterMetricFamily(
            "sublane_requests",
            "Model calls that ended, by outcome, provider, client protocol and operation.",
            labels=["outcome", "provider", "protocol", "operation"],
        )
        for key, count in sorted(self.requests.items()):
            requests.add_metric(list(key), count)
        yield requests
        upstream = CounterMetricFamily(
            "sublane_upstream_responses",
            "Model calls by the HTTP status of the upstream answer they ended with.",
            labels=["provider", "status"],
        )
        for status, count in sorted(self.upstream.items()):
            upstream.add_metric(list(status), count)
        yield upstream
        for name, text, table in (
            (
                "sublane_request_duration_seconds",
                "Model call duration, until the body closed.",
                self.duration,
            ),
            (
                "sublane_request_first_output_seconds",
                "From gateway processing start to the first output delta (HIST-5).",
                self.first_output,
            ),
        ):
            family = HistogramMetricFamily(name, text, labels=["provider", "protocol"])
            for route, histogram in sorted(table.items(), key=lambda item: item[0]):
                family.add_metric(list(route), histogram.buckets(), histogram.total)
            yield family
        for part, (name, text) in zip(
            ("queue", "upstream", "sublane"),
            (
                ("sublane_queue_seconds", "Admission and the wait for an account slot (OPS-13)."),
                (
                    "sublane_upstream_first_byte_seconds",
                    "From the request handed to the upstream to its answer's first byte (OPS-13).",
                ),
                (
                    "sublane_overhead_seconds",
                    "SubLane's own time before the upstream's first byte, queueing aside (OPS-13).",
                ),
            ),
            strict=True,
        ):
            family = HistogramMetricFamily(name, text, labels=["provider"])
            for provider, parts in sorted(self.parts.items()):
                measured: Histogram = getattr(parts, part)
                family.add_metric([provider], measured.buckets(), measured.total)
            yield family


def _gauge(name: str, text: str, labels: list[str], rows: Iterable[tuple[list[str], float]]) -> Any:
    family = GaugeMetricFamily(name, text, labels=labels)
    for values, value in rows:
        family.add_metric(values, value)
    return family


def state_families(
    runtime_answer: dict[str, Any],
    waiting_by_group: dict[int, int],
    recorder: HistoryRecorder | None,
    now: float,
) -> Iterator[Any]:
    """Gauges of what the gateway holds now, from the runtime answer of SPEC §14."""
    workspace = runtime_answer["workspace"]
    yield _gauge(
        "sublane_workspace_in_use", "Operations admitted now (ADM-2).", [], [([], workspace["in_use"])]
    )
    yield _gauge(
        "sublane_workspace_capacity", "Workspace capacity (ADM-2).", [], [([], workspace["capacity"])]
    )
    yield _gauge("sublane_waiting", "Requests waiting for an account slot.", [], [([], workspace["waiting"])])
    yield _gauge(
        "sublane_group_waiters",
        "Requests waiting for a slot, per resource group (WAIT-1).",
        ["group_id"],
        (([str(group_id)], count) for group_id, count in sorted(waiting_by_group.items())),
    )
    accounts = runtime_answer["accounts"]

    def per_account(key: str) -> Iterator[tuple[list[str], float]]:
        for account in accounts:
            yield [str(account["id"]), account["provider"]], float(account[key])

    labels = ["account_id", "provider"]
    yield _gauge(
        "sublane_account_in_flight", "Model requests holding a slot.", labels, per_account("in_flight")
    )
    yield _gauge(
        "sublane_account_max_concurrency", "The account's slot limit.", labels, per_account("max_concurrency")
    )
    yield _gauge(
        "sublane_account_waiters", "Requests waiting for this account.", labels, per_account("waiters")
    )
    yield _gauge(
        "sublane_account_state",
        "1 for the account's scheduling state, 0 for the others.",
        [*labels, "state"],
        (
            ([str(account["id"]), account["provider"], state], float(account["state"] == state))
            for account in accounts
            for state in ACCOUNT_STATES
        ),
    )
    yield _gauge(
        "sublane_account_cooldown_seconds",
        "Seconds left of the account-wide cooldown (0 when none).",
        labels,
        (
            (
                [str(account["id"]), account["provider"]],
                max(0.0, (account["cooldown_until"] or now) - now),
            )
            for account in accounts
        ),
    )
    yield _gauge(
        "sublane_account_limited_models",
        "Models cooling or rate-limited on the account (MCOOL, AGL).",
        labels,
        (([str(account["id"]), account["provider"]], len(account["limited_models"])) for account in accounts),
    )
    quota = [
        (account, row) for account in accounts for row in account["quota"] if row["used_percent"] is not None
    ]
    yield _gauge(
        "sublane_quota_used_percent",
        "Latest observed use of a quota window, in percent (QUOTA-2).",
        [*labels, "window"],
        (([str(a["id"]), a["provider"], row["window"]], row["used_percent"]) for a, row in quota),
    )
    yield _gauge(
        "sublane_quota_observed_timestamp_seconds",
        "When that quota window was observed (Unix seconds).",
        [*labels, "window"],
        (([str(a["id"]), a["provider"], row["window"]], row["observed_at"]) for a, row in quota),
    )
    if recorder is not None:
        yield _gauge(
            "sublane_history_backlog",
            "Request records queued, not yet written.",
            [],
            [([], recorder.backlog)],
        )
        for name, text, value in (
            (
                "sublane_history_dropped",
                "Request records dropped because the queue was full.",
                recorder.dropped,
            ),
            ("sublane_history_write_failures", "Request records whose write failed.", recorder.failed),
        ):
            counter = CounterMetricFamily(name, text)
            counter.add_metric([], value)
            yield counter


def unknown_family(counts: dict[tuple[str, str], int]) -> Any:
    """``sublane_upstream_unknown_total{provider,kind}`` (CLIENT-7): what upstreams answered that
    SubLane does not know, as this process saw it."""
    family = CounterMetricFamily(
        "sublane_upstream_unknown",
        "Upstream answers' event types, fields, error codes and models SubLane does not know.",
        labels=["provider", "kind"],
    )
    for key, count in sorted(counts.items()):
        family.add_metric(list(key), count)
    return family


class _Snapshot(Collector):
    def __init__(self, families: list[Any]) -> None:
        self._families = families

    def collect(self) -> Iterable[Any]:
        return self._families


def metrics_reader(request: Request, db: DbSession) -> None:
    """An admin session, or ``Authorization: Bearer`` with ``SUBLANE_METRICS_TOKEN``."""
    header = request.headers.get("authorization")
    if header is None:
        admin_user(current_user(request, db), request)
        return
    scheme, _, token = header.partition(" ")
    expected = gateway_state(request).settings.metrics_token
    if (
        scheme.lower() != "bearer"
        or expected is None
        or not hmac.compare_digest(token.strip().encode(), expected.get_secret_value().encode())
    ):
        raise SubLaneError(
            "unauthenticated", "Send SUBLANE_METRICS_TOKEN as a bearer token, or sign in as an admin."
        )


MetricsReader = Annotated[None, Depends(metrics_reader)]


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, _reader: MetricsReader) -> Response:
    """The gateway's metrics in Prometheus text format (an admin session or the metrics token)."""
    counters: CallCounters | None = request.app.state.metrics
    if counters is None:
        raise SubLaneError("not_found", "Metrics are off (SUBLANE_METRICS_ENABLED=false).")
    runtime = client_runtime(request)
    loaded = await anyio.to_thread.run_sync(load_accounts, gateway_state(request).engine)
    now = runtime.clock.time()
    families = [
        *counters.families(),
        *state_families(
            runtime_accounts(runtime, *loaded),
            runtime.scheduler.room.waiting_by_group(),
            getattr(request.app.state, "history", None),
            now,
        ),
    ]
    watch = runtime.watch
    if watch is not None:
        families.append(unknown_family(watch.counts))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    ProcessCollector(registry=registry)
    return Response(
        generate_latest(registry), media_type=CONTENT_TYPE_LATEST, headers={"cache-control": "no-store"}
    )
