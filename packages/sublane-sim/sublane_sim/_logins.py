"""Browser-less OAuth logins: which account an authorize request logs in, and the codes it hands out."""

from __future__ import annotations

import base64
import hashlib
from collections import deque
from dataclasses import dataclass

from ._catalog import Provider

__all__ = ["AuthorizationCode", "LoginDesk", "pkce_s256"]

CODE_TTL_S = 600


def pkce_s256(verifier: str) -> str:
    """The S256 code challenge of a PKCE verifier."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(slots=True)
class AuthorizationCode:
    code: str
    provider: Provider
    account_id: str
    redirect_uri: str
    state: str
    code_challenge: str | None
    challenge_method: str | None
    expires_at: float
    used: bool = False

    def verifier_matches(self, verifier: str | None) -> bool:
        if self.code_challenge is None:
            return True
        if verifier is None:
            return False
        if (self.challenge_method or "plain").upper() == "S256":
            return pkce_s256(verifier) == self.code_challenge
        return verifier == self.code_challenge


class LoginDesk:
    """Accounts queued to "sign in" at the next authorize request, and the codes issued."""

    def __init__(self) -> None:
        self._prepared: dict[Provider, deque[str]] = {}
        self._codes: dict[str, AuthorizationCode] = {}

    def prepare(self, provider: Provider, account_id: str) -> None:
        self._prepared.setdefault(provider, deque()).append(account_id)

    def next_prepared(self, provider: Provider) -> str | None:
        queue = self._prepared.get(provider)
        return queue.popleft() if queue else None

    def issue(self, code: AuthorizationCode) -> None:
        self._codes[code.code] = code

    def find(self, code: str) -> AuthorizationCode | None:
        return self._codes.get(code)

    def reset(self) -> None:
        self._prepared.clear()
        self._codes.clear()
