"""Classifying Antigravity error answers (PROTOCOLS §3.7): Google's RPC envelope.

``{"error": {"code", "status", "message", "details": [ErrorInfo, RetryInfo]}}``. A 429 whose
``ErrorInfo`` comes from the cloudcode-pa domain with a per-model reason and ``metadata.model`` is a
limit of that model only (AGL-1; the pipeline checks the model against the request); any other 429
is account-wide (COOL-1). A 503 "No capacity available" is transient and may be retried on the next
host (GEM-4).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from sublane_providers import FailureKind, UpstreamFailure, parse_retry_after
from sublane_providers.kit import MAX_RETRY_AFTER_S, VERSION_IN_TEXT, header

DOMAIN = "cloudcode-pa.googleapis.com"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
#: ErrorInfo reasons that name one model's limit.
MODEL_REASONS = frozenset({"RATE_LIMIT_EXCEEDED", "QUOTA_EXHAUSTED", "MODEL_CAPACITY_EXHAUSTED"})
NO_CAPACITY = "no capacity available"
#: CLIENT-3, an assumption (no refusal of this kind has been captured): Google's APIs refuse an
#: outdated client with ``FAILED_PRECONDITION`` or ``INVALID_ARGUMENT`` and an ``ErrorInfo`` reason
#: naming the client version, or a message asking to upgrade Antigravity.
VERSION_REASONS = frozenset({"CLIENT_VERSION_TOO_OLD", "UNSUPPORTED_CLIENT_VERSION", "CLIENT_TOO_OLD"})
_UPGRADE = re.compile(
    r"(upgrade|update) (to )?(the latest )?(version of )?antigravity|newer version of antigravity", re.I
)
CLIENT_VERSION_CODE = "client_version_too_old"
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: Any) -> float | None:
    """Seconds of a Go/protobuf duration (``0.47s``, ``479.4ms``, ``3h2m1s``); ``None`` otherwise."""
    if not isinstance(text, str) or not text or len(text) > 64:
        return None
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return total if position == len(text) and total == total else None


def _error(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError:
        return {}
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):  # JSON-array streams
        payload = payload[0]
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {}


def _details(error: Mapping[str, Any], kind: str) -> dict[str, Any]:
    for detail in error.get("details") or ():
        if isinstance(detail, dict) and detail.get("@type") == kind:
            return detail
    return {}


def _bounded(seconds: float | None) -> float | None:
    if seconds is None:
        return None
    return min(max(seconds, 1.0), MAX_RETRY_AFTER_S)


def classify_failure(status: int, headers: Mapping[str, str], body: bytes, now: float) -> UpstreamFailure:
    """What an error answer of ``v1internal`` means. Messages never include credentials."""
    error = _error(body)
    info = _details(error, ERROR_INFO)
    reason = info.get("reason") if isinstance(info.get("reason"), str) else None
    canonical = error.get("status") if isinstance(error.get("status"), str) else None
    code = (reason or canonical or f"http_{status}").lower()[:64]
    text = error.get("message")
    message = (text if isinstance(text, str) and text else f"The upstream answered HTTP {status}.")[:500]
    retry_after = parse_retry_after(header(headers, "retry-after"), now)
    if status == 429:
        raw_metadata = info.get("metadata")
        metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
        delay = parse_duration(_details(error, RETRY_INFO).get("retryDelay"))
        if delay is None:
            delay = parse_duration(metadata.get("quotaResetDelay"))
        hints = [hint for hint in (_bounded(delay), retry_after) if hint is not None]
        hint = max(hints) if hints else None  # the longer of RetryInfo and Retry-After
        model = metadata.get("model")
        if info.get("domain") == DOMAIN and reason in MODEL_REASONS and isinstance(model, str) and model:
            return UpstreamFailure(FailureKind.MODEL_RATE_LIMITED, status, code, message, hint, model[:128])
        return UpstreamFailure(FailureKind.RATE_LIMITED, status, code, message, hint)
    if status == 401:
        return UpstreamFailure(FailureKind.UNAUTHORIZED, status, code, message)
    if status == 403:
        return UpstreamFailure(FailureKind.FORBIDDEN, status, code, message)
    if status == 408 or status >= 500:
        if status == 503 and NO_CAPACITY in message.lower():
            code = "no_capacity"
        return UpstreamFailure(FailureKind.TRANSIENT, status, code, message, retry_after)
    if status == 400 and (reason in VERSION_REASONS or _UPGRADE.search(message)):
        found = VERSION_IN_TEXT.search(message)
        return UpstreamFailure(
            FailureKind.CLIENT_VERSION,
            status,
            CLIENT_VERSION_CODE,
            message,
            needed_version=found[1] if found else None,
        )
    return UpstreamFailure(FailureKind.CLIENT_ERROR, status, code, message)


def no_capacity(failure: UpstreamFailure) -> bool:
    """Whether a refusal says this host has no capacity now (another host may, GEM-4)."""
    return failure.code == "no_capacity"
