"""What the running gateway holds: settings, the database engine, the cipher and the clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from starlette.requests import HTTPConnection

from sublane_core import Clock, CredentialCipher, Settings


@dataclass(slots=True)
class GatewayState:
    """Process-wide objects, created once by :func:`sublane_gateway.create_app`."""

    settings: Settings
    engine: Engine
    cipher: CredentialCipher
    clock: Clock
    setup_token: str | None = field(default=None, repr=False)


def gateway_state(connection: HTTPConnection) -> GatewayState:
    """The :class:`GatewayState` of the app serving ``connection``."""
    state: GatewayState = connection.app.state.gateway
    return state
