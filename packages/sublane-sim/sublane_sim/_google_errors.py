"""Google RPC error envelopes for Antigravity (PROTOCOLS.md 3.7)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ._script import Behaviour

__all__ = ["go_duration", "google_error", "rfc3339_z", "rpc_error"]

DOMAIN = "cloudcode-pa.googleapis.com"
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: (
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
        "other valid authentication credential."
    ),
    403: "The caller does not have permission",
    404: "Requested entity was not found.",
    408: "Deadline expired before operation could complete.",
    500: "Internal error encountered.",
    504: "Deadline expired before operation could complete.",
}
_HTML_502 = (
    "<!DOCTYPE html><html lang=en><meta charset=utf-8><title>Error 502 (Server Error)!!1</title>"
    "<p><b>502.</b> <ins>That's an error.</ins><p>The server encountered a temporary error. "
    "<ins>That's all we know.</ins></html>"
)


def rfc3339_z(unix_seconds: float) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def go_duration(seconds: float) -> str:
    """Go/proto style durations: `479.417207ms`, `1.5s`, `3h2m1s`."""
    if seconds < 1:
        return f"{seconds * 1000:.6f}".rstrip("0").rstrip(".") + "ms"
    if seconds < 60:
        return f"{seconds:.9f}".rstrip("0").rstrip(".") + "s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours}h" if hours else ""
    if hours or minutes:
        text += f"{minutes}m"
    return text + f"{secs}s"


def rpc_error(code: int, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": _STATUS.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return {"error": error}


def google_error(
    behaviour: Behaviour, model: str, *, reset_in_s: float | None, now: float
) -> tuple[int, dict[str, Any] | str]:
    """Status and body (or an HTML page for 502) for an Antigravity `error` behaviour.

    `reset_in_s` is set when the model's quota window is exhausted (then the reason defaults to
    `QUOTA_EXHAUSTED` and the delays point at the window reset).
    """
    status = behaviour.status
    if status == 502 and behaviour.error_code is None:
        return status, _HTML_502
    reason = behaviour.error_code
    if status == 429 and reason is None:
        reason = "QUOTA_EXHAUSTED" if reset_in_s is not None else "RATE_LIMIT_EXCEEDED"
    if status == 503 and reason is None:
        return status, rpc_error(
            503, behaviour.error_message or f"No capacity available for model {model} on the server"
        )
    if reason is None or (status not in (429, 503)):
        return status, rpc_error(status, behaviour.error_message or _MESSAGES.get(status, "Upstream error."))
    if reason == "":
        return status, rpc_error(
            status, behaviour.error_message or "Resource has been exhausted (e.g. check quota)."
        )
    if behaviour.retry_delay is not None:
        delay_text = behaviour.retry_delay
        delay_s = _parse_seconds(delay_text)
    else:
        delay_s = reset_in_s if reset_in_s is not None else 0.479417207
        delay_text = f"{delay_s:.9f}".rstrip("0").rstrip(".") + "s"
    metadata = {
        "model": behaviour.error_model or model,
        "quotaResetDelay": go_duration(delay_s),
        "quotaResetTimeStamp": rfc3339_z(now + delay_s),
        "uiMessage": "true",
    }
    message = behaviour.error_message or (
        "No capacity available for this model right now."
        if reason == "MODEL_CAPACITY_EXHAUSTED"
        else "You have exhausted your capacity on this model. "
        f"Your quota will reset after {go_duration(delay_s)}."
    )
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": behaviour.error_domain or DOMAIN,
            "metadata": metadata,
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay_text},
    ]
    return status, rpc_error(status, message, details)


def _parse_seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * units[suffix]
            except ValueError:
                return 0.0
    return 0.0
