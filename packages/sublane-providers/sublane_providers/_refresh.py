"""The outcome of asking a token endpoint for fresh credentials (CRED-3…6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RefreshedCredentials:
    """A new credential bundle (old refresh/id tokens kept where the answer omitted them)."""

    bundle: dict[str, Any]
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
