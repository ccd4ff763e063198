"""The ``request_records`` row of a finished attempt (HIST-2, HIST-12): bounded, sanitized, and
nothing else; built on the writer thread, as the driver stores it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy as sa

from sublane_core import signals, storable_text
from sublane_history._cache_rate import MISS_REASONS
from sublane_history._statements import DriverStatement
from sublane_history._tables import RECORDS

OUTCOMES: Final = ("success", "incomplete", "error", "canceled", "rejected", "client_version")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_MAX_EXCLUSION_REASONS = 16
_MAX_ATTEMPTS = 17  # the first attempt and SUBLANE_FAILOVER_ATTEMPTS (at most 16) more
RequestFinished = signals.RequestFinished


def _count(value: object) -> int | None:
    """A reported count as stored: a non-negative integer, else ``None`` (never a made-up 0)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _text(value: object, limit: int) -> str | None:
    return storable_text(value[:limit]) if isinstance(value, str) and value else None


def _name(value: str, limit: int) -> str:
    """A required text column: bounded and UTF-8 encodable, so one odd value cannot fail a batch."""
    return storable_text(value[:limit])


def _error_code(value: str | None) -> str | None:
    """A sanitized, bounded code: anything that is not shaped like one becomes ``unknown_error``."""
    if value is None:
        return None
    return value if _CODE.fullmatch(value) else "unknown_error"


def routing_explanation(value: object) -> dict[str, Any] | None:
    """The HIST-12 explanation as stored: the rule, the final candidate count, exclusions by reason,
    and — as codes — what refused a request during routing (``refused``), what became of an
    auto-review parent (``parent``), the rotation used (``rotation``) and why a metered account
    served the call (``overflow_reason``, with ``metered: true``; PAID-2).

    Only these parts are kept, as codes and counts, so no account identity, credential or body can
    ride along in it.
    """
    if not isinstance(value, Mapping):
        return None
    explanation: dict[str, Any] = {}
    rule = _text(value.get("rule"), 32)
    if rule is not None:
        explanation["rule"] = rule
    candidates = _count(value.get("candidates"))
    if candidates is not None:
        explanation["candidates"] = candidates
    excluded = value.get("excluded")
    if isinstance(excluded, Mapping):
        reasons: dict[str, int] = {}
        for reason, number in excluded.items():
            counted = _count(number)
            if isinstance(reason, str) and reason and counted is not None:
                reasons[storable_text(reason[:32])] = counted
            if len(reasons) >= _MAX_EXCLUSION_REASONS:
                break
        explanation["excluded"] = reasons
    for part in ("refused", "parent", "rotation", "overflow_reason"):  # codes, never an identity
        word = value.get(part)
        if isinstance(word, str) and _CODE.fullmatch(word):
            explanation[part] = word
    if value.get("metered") is True:  # PAID-2: a metered account served it
        explanation["metered"] = True
    attempts = _attempts(value.get("attempts"))
    if attempts:
        explanation["attempts"] = attempts
    return explanation or None


def _attempts(value: object) -> list[dict[str, Any]]:
    """FAIL-2: each attempt of a request that failed over — its account id (an admin-only number),
    outcome and error code; at most :data:`_MAX_ATTEMPTS`."""
    if not isinstance(value, list):
        return []
    attempts: list[dict[str, Any]] = []
    for attempt in value[:_MAX_ATTEMPTS]:
        if not isinstance(attempt, Mapping):
            continue
        account_id = attempt.get("account_id")
        outcome = attempt.get("outcome")
        attempts.append(
            {
                "account_id": account_id if type(account_id) is int else None,
                "outcome": outcome if outcome in OUTCOMES else "error",
                "error_code": _error_code(_text(attempt.get("error_code"), 64)),
            }
        )
    return attempts


RECORD_COLUMNS: Final = (
    "request_id", "started_at", "duration_ms", "first_token_ms", "user_id", "key_id", "group_id",
    "account_id", "provider", "model", "protocol", "operation", "outcome", "error_code", "upstream_status",
    "input_tokens", "output_tokens", "cached_tokens", "routing", "served_model", "cache_miss_reason",
    "cache_write_tokens", "cost_usd", "timing",
)  # fmt: skip
INSERT_RECORDS: Final = DriverStatement(
    sa.insert(RECORDS).values({name: sa.bindparam(name) for name in RECORD_COLUMNS}), RECORD_COLUMNS
)


def record_values(payload: RequestFinished, cost_usd: float | None = None) -> tuple[Any, ...]:
    """The ``request_records`` row of one attempt as the driver stores it, in :data:`RECORD_COLUMNS`
    order: the fields of HIST-2, bounded, and nothing else; the routing explanation as JSON text
    (what the ``JSON`` column type would write, ``null`` included); ``cost_usd`` as the writer
    priced it (COST-2)."""
    status = payload.upstream_status
    outcome = payload.outcome
    return (
        _name(payload.request_id, 40),
        float(payload.started_at),
        _count(payload.duration_ms),
        _count(payload.first_token_ms),
        payload.user_id,
        payload.key_id,
        payload.group_id,
        payload.account_id,
        _text(payload.provider, 32),
        _name(payload.model, 128),
        _name(payload.protocol, 32),
        _name(payload.operation, 32),
        outcome if outcome in OUTCOMES else "error",
        _error_code(payload.error_code),
        status if isinstance(status, int) and 100 <= status <= 599 else None,
        _count(payload.input_tokens),
        _count(payload.output_tokens),
        _count(payload.cached_tokens),
        _routing_text(routing_explanation(payload.routing)),
        _text(payload.served_model, 128),
        payload.cache_miss_reason if payload.cache_miss_reason in MISS_REASONS else None,
        _count(payload.cache_write_tokens),
        cost_usd,
        _timing_text(payload.timing),
    )


TIMING_FIELDS: Final = ("queue_ms", "connect_ms", "first_byte_ms", "total_ms", "sublane_ms")


def _timing_text(timing: dict[str, int] | None) -> str:
    """The OPS-13 timing as JSON text: its five counts, nothing else (``null`` when there is none)."""
    if timing is None:
        return "null"
    values = [_count(timing.get(name)) for name in TIMING_FIELDS]
    return (
        "{"
        + ",".join(f'"{n}":{"null" if v is None else v}' for n, v in zip(TIMING_FIELDS, values, strict=True))
        + "}"
    )


# The JSON of the explanations seen lately: a busy gateway repeats a handful of them, and encoding
# cost more than building the rest of the row. Bounded; a plain dict is safe under the GIL.
_ROUTING_TEXTS: dict[tuple[Any, ...], str] = {}
_MAX_ROUTING_TEXTS: Final = 1024


def _routing_text(explanation: dict[str, Any] | None) -> str:
    """``json.dumps(explanation)`` (codes, counts and one dict of counts, in the order they came)."""
    if explanation is None:
        return "null"
    if "attempts" in explanation:  # rare (a failover) and varied: not worth a cache entry
        return json.dumps(explanation)
    key = tuple(
        (name, tuple(part.items()) if isinstance(part, dict) else part) for name, part in explanation.items()
    )
    text = _ROUTING_TEXTS.get(key)
    if text is None:
        if len(_ROUTING_TEXTS) >= _MAX_ROUTING_TEXTS:
            _ROUTING_TEXTS.clear()
        text = _ROUTING_TEXTS[key] = json.dumps(explanation)
    return text


def record_row(payload: RequestFinished) -> dict[str, Any]:
    """The ``request_records`` row of one attempt by column, with the routing explanation as a dict."""
    row = dict(zip(RECORD_COLUMNS, record_values(payload), strict=True))
    row["routing"] = routing_explanation(payload.routing)
    row["timing"] = json.loads(row["timing"])
    return row
