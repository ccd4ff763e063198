"""The text of ``GET /metrics`` (OPS-8), written by prometheus-client's exposition.

Imported by the first scrape, not at start: SubLane counts calls in plain dictionaries
(:class:`sublane_gateway._metrics.CallCounters`) and reads the rest when asked, so the library (its
``__init__`` imports its WSGI and HTTP servers too: about 1 MB resident) is needed only to write the
answer (issue #49).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from sublane_gateway._metrics import ACCOUNT_STATES, CallCounters, Histogram
from sublane_history import HistoryRecorder

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


def counter_families(counters: CallCounters) -> Iterator[Any]:
    """The families of what :class:`CallCounters` added up."""
    requests = CounterMetricFamily(
        "sublane_requests",
        "Model calls that ended, by outcome, provider, client protocol and operation.",
        labels=["outcome", "provider", "protocol", "operation"],
    )
    for key, count in sorted(counters.requests.items()):
        requests.add_metric(list(key), count)
    yield requests
    upstream = CounterMetricFamily(
        "sublane_upstream_responses",
        "Model calls by the HTTP status of the upstream answer they ended with.",
        labels=["provider", "status"],
    )
    for status, count in sorted(counters.upstream.items()):
        upstream.add_metric(list(status), count)
    yield upstream
    for name, text, table in (
        (
            "sublane_request_duration_seconds",
            "Model call duration, until the body closed.",
            counters.duration,
        ),
        (
            "sublane_request_first_output_seconds",
            "From gateway processing start to the first output delta (HIST-5).",
            counters.first_output,
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
        for provider, parts in sorted(counters.parts.items()):
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


def render(families: list[Any]) -> bytes:
    """The families in Prometheus' text format, with the process's own (CPU, memory, files)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    ProcessCollector(registry=registry)
    return generate_latest(registry)
