"""Reading claims from JWTs without verifying them.

Upstream tokens are verified by the upstream; SubLane only reads what they say about identity and
expiry (PROTOCOLS §1.9), so no signature check and no JWT library is needed.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any


def unverified_claims(token: str) -> dict[str, Any] | None:
    """The payload of a compact JWT as a dict, or ``None`` when ``token`` is not one."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[1]:
        return None
    segment = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        payload = json.loads(base64.urlsafe_b64decode(segment.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        return None
    return payload if isinstance(payload, dict) else None


def expiry_of(token: str) -> float | None:
    """The ``exp`` claim of a JWT, in Unix seconds, or ``None``."""
    claims = unverified_claims(token)
    if claims is None:
        return None
    exp = claims.get("exp")
    if isinstance(exp, int | float) and not isinstance(exp, bool) and 0 < exp < 1e11:
        return float(exp)  # OPS-1: a 400-digit or infinite exp is no expiry
    return None
