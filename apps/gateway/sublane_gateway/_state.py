"""What the running gateway holds: settings, the database engine, the cipher, the clock and logins."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from starlette.requests import HTTPConnection

from sublane_core import Clock, CredentialCipher, Settings
from sublane_gateway._login_throttle import LoginThrottle
from sublane_gateway._oidc import OidcProvider
from sublane_providers import PkcePair

LOGIN_TTL_S = 600.0  # as long as the providers keep an authorization code
MAX_PENDING_LOGINS = 64


@dataclass(frozen=True, slots=True)
class PendingLogin:
    """An OAuth login an admin started and has not completed (CRED-9). Holds the PKCE verifier."""

    provider: str
    user_id: int
    pkce: PkcePair = field(repr=False)
    name: str | None
    group_ids: tuple[int, ...]
    expires_at: float  # on the clock's monotonic reading


class PendingLogins:
    """Started OAuth logins by ``state``: process-local, bounded, short-lived, one use each.

    Nothing here is stored or logged; a restart simply forgets the logins in progress. When full,
    the oldest login makes room. Safe to use from the event loop and worker threads alike.
    """

    def __init__(self, ttl_s: float = LOGIN_TTL_S, capacity: int = MAX_PENDING_LOGINS) -> None:
        self.ttl_s = ttl_s
        self._capacity = capacity
        self._logins: OrderedDict[str, PendingLogin] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._logins)

    def add(self, state: str, login: PendingLogin, now: float) -> None:
        """Remember ``login`` under ``state`` until ``login.expires_at``."""
        with self._lock:
            self._purge(now)
            while len(self._logins) >= self._capacity:
                self._logins.popitem(last=False)
            self._logins[state] = login

    def get(self, state: str, user_id: int, now: float) -> PendingLogin | None:
        """The live login started by ``user_id`` under ``state``, left in place."""
        with self._lock:
            self._purge(now)
            login = self._logins.get(state)
            return login if login is not None and login.user_id == user_id else None

    def take(self, state: str, user_id: int, now: float) -> PendingLogin | None:
        """Like :meth:`get`, and the login is gone afterwards: a state completes at most once."""
        with self._lock:
            self._purge(now)
            login = self._logins.get(state)
            if login is None or login.user_id != user_id:
                return None
            del self._logins[state]
            return login

    def _purge(self, now: float) -> None:
        for state in [state for state, login in self._logins.items() if login.expires_at <= now]:
            del self._logins[state]


@dataclass(slots=True)
class GatewayState:
    """Process-wide objects, created once by :func:`sublane_gateway.create_app`."""

    settings: Settings
    engine: Engine
    cipher: CredentialCipher
    clock: Clock
    schema_head: str = ""  # the schema revision this code expects (``/readyz``)
    setup_token: str | None = field(default=None, repr=False)
    logins: PendingLogins = field(default_factory=PendingLogins, repr=False)
    login_throttle: LoginThrottle | None = field(default=None, repr=False)  # OPS-4, set by create_app
    oidc: OidcProvider | None = field(default=None, repr=False)  # AUTH-2, made on first use


def gateway_state(connection: HTTPConnection) -> GatewayState:
    """The :class:`GatewayState` of the app serving ``connection``."""
    state: GatewayState = connection.app.state["gateway"]  # by key: see ``client_runtime``
    return state
