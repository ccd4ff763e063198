"""Codex (ChatGPT backend) error bodies and the `x-codex-*` rate-limit headers (PROTOCOLS.md 1.5, 1.11)."""

from __future__ import annotations

from typing import Any

from ._accounts import Account, AuthProblem
from ._script import Behaviour

__all__ = ["auth_error", "codex_error", "rate_limit_headers", "rate_limit_snapshot", "usage_payload"]

_HTML_PAGE = (
    "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
    "<center><h1>{status} {reason}</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
)
_REASONS = {502: "Bad Gateway", 504: "Gateway Time-out"}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0")


def rate_limit_headers(account: Account, now: float) -> dict[str, str]:
    """The `x-codex-*` family every Codex response carries."""
    headers = {"x-codex-active-limit": "codex", "x-codex-plan-type": account.plan}
    for name in ("primary", "secondary"):
        window = account.quota.get(name)
        if window is None:
            continue
        window.roll(now)
        headers[f"x-codex-{name}-used-percent"] = _number(window.used_percent)
        headers[f"x-codex-{name}-window-minutes"] = str(window.window_s // 60)
        headers[f"x-codex-{name}-reset-at"] = str(int(window.reset_at))
        headers[f"x-codex-{name}-reset-after-seconds"] = str(window.reset_after(now))
    headers["x-codex-primary-over-secondary-limit-percent"] = "0"
    headers["x-codex-credits-has-credits"] = "False"
    headers["x-codex-credits-balance"] = "0"
    headers["x-codex-credits-unlimited"] = "False"
    return headers


def _window_json(account: Account, name: str, now: float) -> dict[str, Any] | None:
    window = account.quota.get(name)
    if window is None:
        return None
    window.roll(now)
    return {
        "used_percent": window.used_percent,
        "limit_window_seconds": window.window_s,
        "reset_after_seconds": window.reset_after(now),
        "reset_at": int(window.reset_at),
    }


def rate_limit_snapshot(account: Account, now: float) -> dict[str, Any]:
    """The WebSocket `codex.rate_limits` event."""
    windows: dict[str, Any] = {}
    for name in ("primary", "secondary"):
        window = account.quota.get(name)
        if window is not None:
            window.roll(now)
            windows[name] = {
                "used_percent": window.used_percent,
                "window_minutes": window.window_s // 60,
                "reset_at": int(window.reset_at),
            }
        else:
            windows[name] = None
    return {
        "type": "codex.rate_limits",
        "plan_type": account.plan,
        "rate_limits": windows,
        "credits": {"has_credits": False, "unlimited": False, "balance": "0"},
        "limit_name": "codex",
    }


def usage_payload(account: Account, now: float) -> dict[str, Any]:
    """`GET /backend-api/wham/usage`."""
    primary = _window_json(account, "primary", now)
    secondary = _window_json(account, "secondary", now)
    reached = any(w.exhausted for w in account.quota.values())
    return {
        "plan_type": account.plan,
        "rate_limit": {
            "allowed": not reached,
            "limit_reached": reached,
            "primary_window": primary,
            "secondary_window": secondary,
        },
        "code_review_rate_limit": {
            "allowed": True,
            "limit_reached": False,
            "primary_window": primary,
            "secondary_window": None,
        },
        "additional_rate_limits": [],
        "credits": {"has_credits": False, "unlimited": False, "balance": "0"},
        "rate_limit_reached_type": {"kind": "rate_limit_reached"} if reached else None,
    }


def auth_error(problem: AuthProblem) -> tuple[int, dict[str, Any]]:
    code, message = {
        "expired": (
            "token_expired",
            "Provided authentication token is expired. Please try signing in again.",
        ),
        "revoked": (
            "token_invalidated",
            "Your authentication token has been invalidated. Please sign in again.",
        ),
    }.get(
        problem, ("invalid_token", "Could not parse your authentication token. Please try signing in again.")
    )
    return 401, {"error": {"message": message, "type": "invalid_request_error", "code": code, "param": None}}


def codex_error(
    behaviour: Behaviour, account: Account, now: float, quota_window: str | None
) -> tuple[int, dict[str, Any] | str, dict[str, str]]:
    """Status, body (JSON object or an HTML page) and extra headers for an `error` behaviour."""
    status = behaviour.status
    headers: dict[str, str] = {}
    if behaviour.retry_after is not None:
        headers["retry-after"] = behaviour.retry_after
    code = behaviour.error_code
    message = behaviour.error_message
    if status == 429:
        kind = code or "usage_limit_reached"
        if kind in ("usage_limit_reached", "usage_not_included"):
            if quota_window is not None:
                window = account.quota[quota_window]
                resets_in = window.reset_after(now)
            else:
                resets_in = behaviour.resets_in_s if behaviour.resets_in_s is not None else 3600
            error: dict[str, Any] = {
                "type": kind,
                "message": message
                or (
                    "The usage limit has been reached"
                    if kind == "usage_limit_reached"
                    else "Your plan does not include Codex."
                ),
                "plan_type": account.plan,
                "resets_at": int(now + resets_in),
                "resets_in_seconds": resets_in,
                "eligible_promo": None,
            }
            return status, {"error": error}, headers
        return (
            status,
            {
                "error": {
                    "message": message or "Rate limit reached for requests. Please try again in 20s.",
                    "type": "requests",
                    "code": kind,
                    "param": None,
                }
            },
            headers,
        )
    if status in _REASONS:
        return status, _HTML_PAGE.format(status=status, reason=_REASONS[status]), headers
    if status == 400:
        return status, {"detail": message or "Bad request"}, headers
    if status == 401:
        auth_status, auth_body = auth_error("expired" if code == "token_expired" else "unknown")
        return auth_status, auth_body, headers
    if status == 403:
        body = {
            "error": {
                "message": message or "You do not have access to this workspace.",
                "type": "invalid_request_error",
                "code": code or "forbidden",
                "param": None,
            }
        }
        return status, body, headers
    if status == 503:
        kind = code or "server_is_overloaded"
        return (
            status,
            {
                "error": {
                    "code": kind,
                    "message": message or _overloaded(kind),
                    "type": "service_unavailable_error",
                }
            },
            headers,
        )
    kinds = {408: ("timeout", "Request timed out."), 500: ("server_error", "An error occurred.")}
    default_code, default_message = kinds.get(status, ("server_error", "Upstream error."))
    return (
        status,
        {
            "error": {
                "message": message or default_message,
                "type": "server_error",
                "code": code or default_code,
                "param": None,
            }
        },
        headers,
    )


def _overloaded(kind: str) -> str:
    if kind == "slow_down":
        return "Please slow down."
    return "Our servers are currently overloaded. Please try again later."
