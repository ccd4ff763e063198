"""The outcome of asking a token endpoint for fresh credentials (CRED-3…6)."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sublane_providers._http import header

MAX_OAUTH_RETRY_AFTER_S = 3600.0


@dataclass(frozen=True, slots=True)
class RefreshedCredentials:
    """A new credential bundle (old refresh/id tokens kept where the answer omitted them)."""

    bundle: dict[str, Any] = field(repr=False)  # the secrets: never in a repr
    expires_at: float | None


class RefreshFailed(Exception):
    """The token endpoint did not give fresh credentials.

    ``permanent`` only for explicit credential errors (``invalid_grant``, ``refresh_token_reused``…):
    those require re-authorization (CRED-6). Everything else is transient and retried after a
    backoff; ``retry_after`` carries an OAuth ``Retry-After`` when there was one (CRED-3).
    """

    def __init__(self, code: str, *, permanent: bool, retry_after: float | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.permanent = permanent
        self.retry_after = retry_after


def oauth_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """A token endpoint's ``Retry-After`` (seconds or HTTP date), capped at 1 h (CRED-3)."""
    value = header(headers, "retry-after")
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(text).timestamp() - now
        except (TypeError, ValueError, IndexError):
            return None
    if seconds != seconds or seconds <= 0:  # NaN or already past
        return None
    return min(seconds, MAX_OAUTH_RETRY_AFTER_S)
