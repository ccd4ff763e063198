"""Identifiers and secrets SubLane generates."""

from __future__ import annotations

import base64
import hashlib
import random
import secrets
import time
import uuid

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
# Identifiers that are not secrets come from a generator seeded once from the OS: a getrandbits()
# or uuid4() from the OS is a system call on every model request (profiled in BENCHMARKS.md).
# Keys, session tokens and OAuth states keep using ``secrets``.
_IDS = random.Random(secrets.randbits(256))  # noqa: S311 - request IDs, not secrets


def new_request_id(now: float | None = None) -> str:
    """A ``req_…`` ID (HIST-4): 48 bits of milliseconds then 80 random bits, Crockford base32.

    IDs sort by creation time, which keeps the compact display (HIST-11) and lookups cheap.
    """
    millis = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | _IDS.getrandbits(80)
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "req_" + "".join(reversed(chars))


def new_uuid() -> str:
    """A random (version 4) UUID string, for upstream request and correlation IDs (not secrets)."""
    return str(uuid.UUID(int=_IDS.getrandbits(128), version=4))


def new_secret_token(nbytes: int = 32) -> str:
    """``nbytes`` random bytes as unpadded base64url."""
    return base64.urlsafe_b64encode(secrets.token_bytes(nbytes)).rstrip(b"=").decode("ascii")


def sha256_hex(value: str) -> str:
    """The hex SHA-256 digest of a UTF-8 string: how keys and session tokens are stored."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()
