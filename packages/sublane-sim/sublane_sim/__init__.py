"""sublane-sim: a loopback simulator of the Codex, Claude and Antigravity upstreams.

A real HTTP + WebSocket server that speaks the upstream side of each provider's protocol, with
scripted faults, a controllable clock and introspection, so the SubLane gateway can be tested,
demoed and benchmarked without internet access.
"""

from ._accounts import Account
from ._catalog import PROVIDERS, Provider
from ._clock import SimClock
from ._logins import pkce_s256
from ._records import AccountCounters, RequestRecord
from ._script import (
    Behaviour,
    BehaviourKind,
    CutMode,
    QuotaReadKind,
    QuotaReadOutcome,
    RefreshKind,
    RefreshOutcome,
)
from ._simulator import SimAccount, Simulator
from ._sse import SseEvent, parse_sse
from ._tokens import decode_jwt_payload, encode_unsigned_jwt

__all__ = [
    # The simulator and its clock
    "SimClock",
    "Simulator",
    # Accounts and credentials
    "PROVIDERS",
    "Account",
    "Provider",
    "SimAccount",
    "decode_jwt_payload",
    "encode_unsigned_jwt",
    "pkce_s256",
    # Scripted behaviour
    "Behaviour",
    "BehaviourKind",
    "CutMode",
    "RefreshKind",
    "RefreshOutcome",
    "QuotaReadKind",
    "QuotaReadOutcome",
    # Introspection
    "AccountCounters",
    "RequestRecord",
    "SseEvent",
    "parse_sse",
]
