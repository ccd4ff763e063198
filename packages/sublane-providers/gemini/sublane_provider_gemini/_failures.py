"""Classifying the Gemini API's error answers: Google's RPC envelope, with an API key.

``{"error": {"code", "message", "status", "details": [...]}}``. What differs from the kit's generic
reading (:func:`~sublane_providers.kit.classify_api_failure`):

- a wrong, deleted or expired key is not a 401: the Gemini API answers **400** ``INVALID_ARGUMENT``
  with an ``ErrorInfo`` whose ``reason`` is ``API_KEY_INVALID`` ("API key not valid. Please pass a
  valid API key." / "API Key not found." / "API key expired."): that is the key refused, so the
  account is ``unauthorized`` (PAID-4), never a fault of the request;
- a 429 ``RESOURCE_EXHAUSTED`` says how long to wait in a ``google.rpc.RetryInfo`` detail
  (``"retryDelay": "43s"``), not in a ``Retry-After`` header: it is read as the retry-after (the
  longer of the two when both come).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from sublane_core import json_loads
from sublane_providers import FailureKind, UpstreamFailure
from sublane_providers.kit import MAX_RETRY_AFTER_S, UNAUTHORIZED_CODE, classify_api_failure

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
#: ErrorInfo reasons meaning the key itself is refused (wrong, deleted, expired).
KEY_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED"})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def google_error(body: bytes) -> dict[str, Any]:
    """The ``error`` object of an answer (``{}`` when it has none); a one-element array is read
    as its element (Google's REST errors sometimes come so)."""
    try:
        payload = json_loads(body)
    except ValueError:
        return {}
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {}


def detail(error: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The first detail of ``@type`` ``kind``."""
    details = error.get("details")
    for item in details if isinstance(details, list) else ():
        if isinstance(item, dict) and item.get("@type") == kind:
            return item
    return {}


def retry_delay(error: Mapping[str, Any]) -> float | None:
    """Seconds of the ``RetryInfo`` ``retryDelay`` (a protobuf duration: ``"43s"``, ``"1.5s"``),
    within 1 s … 1 h; ``None`` when absent or unreadable."""
    text = detail(error, RETRY_INFO).get("retryDelay")
    if not isinstance(text, str) or not text or len(text) > 32:
        return None
    position, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(text):
        return None
    return min(max(total, 1.0), MAX_RETRY_AFTER_S)


def key_refused(status: int, error: Mapping[str, Any]) -> bool:
    """Whether an answer says the API key itself is refused."""
    reason = detail(error, ERROR_INFO).get("reason")
    return status == 401 or (status in (400, 403) and reason in KEY_REASONS)


def classify_failure(status: int, headers: Mapping[str, str], body: bytes, now: float) -> UpstreamFailure:
    """What an error answer of the Gemini API means (PAID-4); messages never carry the key."""
    error = google_error(body)
    if key_refused(status, error):
        return UpstreamFailure(
            FailureKind.UNAUTHORIZED, status, UNAUTHORIZED_CODE, "The provider refused the API key."
        )
    failure = classify_api_failure(status, headers, body, now)
    if status == 429:
        hints = [hint for hint in (failure.retry_after, retry_delay(error)) if hint is not None]
        return dataclasses.replace(failure, retry_after=max(hints) if hints else None)
    return failure
