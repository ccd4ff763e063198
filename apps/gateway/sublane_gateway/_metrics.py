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
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from sublane_core import SubLaneError, signals
from sublane_gateway._sessions import DbSession, admin_user, current_user
from sublane_gateway._state import gateway_state
from sublane_gateway.management._runtime_view import load_accounts, runtime_accounts
from sublane_gateway.pipeline import client_runtime

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
    # prometheus-client writes the text format: imported by the first scrape (issue #49: ~1 MB)
    from sublane_gateway._metrics_exposition import (
        CONTENT_TYPE,
        counter_families,
        render,
        state_families,
        unknown_family,
    )

    families = [
        *counter_families(counters),
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
    return Response(render(families), media_type=CONTENT_TYPE, headers={"cache-control": "no-store"})
