"""OPS-14: the Kustomize base in ``deploy/kubernetes/`` and the Grafana dashboard in
``deploy/grafana/sublane.json``.

- Every core manifest validates offline against the Kubernetes schemas ``kubernetes-validate``
  ships (strict: an unknown field is an error). ``ServiceMonitor`` and ``PrometheusRule`` are
  custom resources of the Prometheus Operator, which those schemas do not hold (the library raises
  ``SchemaNotFoundError`` for them and has no CRD handling): they are validated with jsonschema
  against :data:`CRD_SCHEMAS`, the fields the operator documents for ``monitoring.coreos.com/v1``
  (unknown fields refused where this base sets any).
- Every metric name in the dashboard's and the alert rules' queries is one a real gateway's
  ``/metrics`` declares, scraped after a call (histograms as ``_bucket``/``_sum``/``_count``,
  counters as ``_total``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from gateway_pool import Pool
from prometheus_client.parser import text_string_to_metric_families

from sublane_gateway._cli import SHUTDOWN_GRACE_S

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "deploy" / "kubernetes"
DASHBOARD = ROOT / "deploy" / "grafana" / "sublane.json"
KUBERNETES_VERSION = "1.30"  # the oldest release this base is written for
TOKEN = "metrics-token-for-kubernetes"

_STRING = {"type": "string"}
_LABELS = {"type": "object", "additionalProperties": _STRING}
_METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": _STRING, "namespace": _STRING, "labels": _LABELS, "annotations": _LABELS},
    "additionalProperties": False,
}
_DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_SECRET_KEY = {
    "type": "object",
    "required": ["key"],
    "properties": {"name": _STRING, "key": _STRING, "optional": {"type": "boolean"}},
    "additionalProperties": False,
}
_RULE = {
    "type": "object",
    "required": ["expr"],
    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
    "properties": {
        "alert": _STRING,
        "record": _STRING,
        "expr": {"type": ["string", "integer"]},
        "for": _DURATION,
        "keep_firing_for": _DURATION,
        "labels": _LABELS,
        "annotations": _LABELS,
    },
    "additionalProperties": False,
}
#: ``monitoring.coreos.com/v1`` as the Prometheus Operator's API reference documents it, for the
#: fields a base like this one uses (``ServiceMonitorSpec``/``Endpoint``, ``PrometheusRuleSpec``/
#: ``RuleGroup``/``Rule``).
CRD_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": _METADATA,
            "spec": {
                "type": "object",
                "required": ["selector", "endpoints"],
                "properties": {
                    "jobLabel": _STRING,
                    "selector": {
                        "type": "object",
                        "properties": {"matchLabels": _LABELS, "matchExpressions": {"type": "array"}},
                        "additionalProperties": False,
                    },
                    "namespaceSelector": {"type": "object"},
                    "endpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "port": _STRING,
                                "targetPort": {"type": ["string", "integer"]},
                                "path": _STRING,
                                "scheme": {"enum": ["http", "https"]},
                                "interval": _DURATION,
                                "scrapeTimeout": _DURATION,
                                "honorLabels": {"type": "boolean"},
                                "authorization": {
                                    "type": "object",
                                    "properties": {"type": _STRING, "credentials": _SECRET_KEY},
                                    "additionalProperties": False,
                                },
                                "bearerTokenSecret": _SECRET_KEY,
                                "tlsConfig": {"type": "object"},
                                "relabelings": {"type": "array"},
                                "metricRelabelings": {"type": "array"},
                            },
                            "additionalProperties": False,
                        },
                    },
                },
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    },
    ("monitoring.coreos.com/v1", "PrometheusRule"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": _METADATA,
            "spec": {
                "type": "object",
                "properties": {
                    "groups": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "rules"],
                            "properties": {
                                "name": _STRING,
                                "interval": _DURATION,
                                "limit": {"type": "integer"},
                                "rules": {"type": "array", "minItems": 1, "items": _RULE},
                            },
                            "additionalProperties": False,
                        },
                    }
                },
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    },
}


def _kustomization() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    return loaded


def _resources() -> Iterator[tuple[str, dict[str, Any]]]:
    for name in _kustomization()["resources"]:
        for document in yaml.safe_load_all((BASE / name).read_text()):
            if document is not None:
                yield name, document


def _by_kind(kind: str) -> dict[str, Any]:
    (found,) = [document for _name, document in _resources() if document["kind"] == kind]
    return found


def test_ops_14_manifests_validate() -> None:
    kustomization = _kustomization()
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    listed = set(kustomization["resources"])
    on_disk = {path.name for path in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk  # every listed file exists, and no manifest is left out
    kinds = []
    for name, document in _resources():
        kinds.append(document["kind"])
        crd = CRD_SCHEMAS.get((document["apiVersion"], document["kind"]))
        if crd is not None:
            jsonschema.Draft202012Validator(crd).validate(document)
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):  # why they are checked here
                kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
        else:
            try:
                kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
            except kubernetes_validate.ValidationError as error:
                raise AssertionError(f"{name}: {error.message}") from None
    for kind in (
        "Deployment", "Job", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
        "ServiceMonitor", "PrometheusRule",
    ):  # fmt: skip
        assert kind in kinds
    # The Deployment: probes on /readyz and /healthz, a preStop drain the grace period covers.
    pod = _by_kind("Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    drain = int(command[1])
    assert (
        drain
        >= container["readinessProbe"]["periodSeconds"] * container["readinessProbe"]["failureThreshold"]
    )
    assert pod["terminationGracePeriodSeconds"] > drain + SHUTDOWN_GRACE_S
    # The migration Job runs `sublane migrate`, and the replicas do not upgrade by themselves.
    job = _by_kind("Job")["spec"]["template"]["spec"]
    assert job["containers"][0]["args"] == ["migrate"]
    assert _by_kind("ConfigMap")["data"]["SUBLANE_AUTO_MIGRATE"] == "false"
    # The Service, the disruption budget, the autoscaler and the monitor find the Deployment's pods.
    selector = _by_kind("Deployment")["spec"]["selector"]["matchLabels"]
    assert _by_kind("Service")["spec"]["selector"] == selector
    assert _by_kind("PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    assert _by_kind("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]["name"] == "sublane"
    assert (
        _by_kind("ServiceMonitor")["spec"]["selector"]["matchLabels"].items()
        <= _by_kind("Service")["metadata"].get("labels", {}).items() | selector.items()
    )


def test_ops_14_a_bad_manifest_is_refused() -> None:
    """The validation can fail: a misspelt field, and a CRD field of the wrong kind."""
    deployment = _by_kind("Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    rule = _by_kind("PrometheusRule")
    rule["spec"]["groups"][0]["rules"][0]["for"] = "five minutes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(CRD_SCHEMAS[("monitoring.coreos.com/v1", "PrometheusRule")]).validate(
            rule
        )


# -- metric names --------------------------------------------------------------------------------

#: PromQL's words that are not metric names (functions, aggregations, operators, modifiers).
PROMQL_WORDS = frozenset(
    [
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
        "group",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "offset",
        "bool",
        "rate",
        "irate",
        "increase",
        "delta",
        "idelta",
        "histogram_quantile",
        "abs",
        "ceil",
        "floor",
        "round",
        "clamp_min",
        "clamp_max",
        "clamp",
        "label_replace",
        "label_join",
        "vector",
        "scalar",
        "time",
        "absent",
        "absent_over_time",
        "sum_over_time",
        "avg_over_time",
        "max_over_time",
        "min_over_time",
        "deriv",
        "predict_linear",
        "changes",
        "resets",
        "sort",
        "sort_desc",
    ]
)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # strings (label values, quantile args aside)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors ([10m], [$__rate_interval])
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    words = set(re.findall(r"(?<![\w$.])[A-Za-z_:][A-Za-z0-9_:]*", text))
    return words - PROMQL_WORDS


def _exported(make_pool: Callable[..., Pool]) -> set[str]:
    pool = make_pool(metrics_token=TOKEN)
    client = pool.client()
    assert client.post("/v1/responses", json={"model": "gpt-5-codex", "input": "hi"}).status_code == 200
    answer = pool.gateway.client().get("/metrics", headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    names: set[str] = set()
    for family in text_string_to_metric_families(answer.text):
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_sum", "_count"),
            "summary": ("_sum", "_count"),
        }.get(family.type, ("",))
        names.update(family.name + suffix for suffix in suffixes)  # declared, samples or not
        names.update(sample.name for sample in family.samples)
    return names


def _dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = []
    for panel in dashboard["panels"]:
        for nested in [panel, *panel.get("panels", [])]:
            queries.extend(target["expr"] for target in nested.get("targets", []))
    return queries


def _alert_queries() -> list[str]:
    rule = _by_kind("PrometheusRule")
    return [str(item["expr"]) for group in rule["spec"]["groups"] for item in group["rules"]]


def test_ops_14_metric_names_are_read_from_queries() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, provider) (rate(sublane_x_bucket{a="b"}[5m]))) / sum(up)'
    assert metric_names(expr) == {"sublane_x_bucket", "up"}


def test_ops_14_dashboard_queries_use_exported_metrics(make_pool: Callable[..., Pool]) -> None:
    exported = _exported(make_pool)
    queries = _dashboard_queries()
    used = set().union(*(metric_names(query) for query in queries))
    assert all(metric_names(query) for query in queries)  # every query reads a metric
    assert used - exported == set()
    # What the dashboard must show (OPS-14): outcomes, in flight and waiting per account, quota per
    # window, and OPS-13's breakdown.
    for name in (
        "sublane_requests_total", "sublane_account_in_flight", "sublane_account_waiters",
        "sublane_quota_used_percent", "sublane_queue_seconds_bucket",
        "sublane_upstream_first_byte_seconds_bucket", "sublane_overhead_seconds_bucket",
    ):  # fmt: skip
        assert name in used, name


def test_ops_14_alert_rules_use_exported_metrics(make_pool: Callable[..., Pool]) -> None:
    exported = _exported(make_pool)
    rules = {item["alert"]: str(item["expr"]) for group in _by_kind("PrometheusRule")["spec"]["groups"]
             for item in group["rules"]}  # fmt: skip
    used = set().union(*(metric_names(query) for query in rules.values()))
    assert all(metric_names(query) for query in rules.values())
    assert used - exported == set()
    # A pool that runs dry, accounts needing re-authorization, error rate, first-token time.
    assert 'state="ready"' in rules["SubLanePoolRunsDry"]
    assert 'state="reauth_required"' in rules["SubLaneAccountNeedsReauthorization"]
    assert 'outcome="error"' in rules["SubLaneErrorRate"]
    assert "sublane_request_first_output_seconds_bucket" in rules["SubLaneSlowFirstToken"]
