"""Identifiers and secrets SubLane generates."""

from __future__ import annotations

import base64
import hashlib
import random
import secrets
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
# Identifiers that are not secrets come from a generator seeded once from the OS: a getrandbits()
# or uuid4() from the OS is a system call on every model request (profiled in BENCHMARKS.md).
# Keys, session tokens and OAuth states keep using ``secrets``.
_IDS = random.Random(secrets.randbits(256))  # noqa: S311 - request IDs, not secrets
# Two Crockford characters per 10 bits: a request ID (130 bits, the top two zero) is 13 lookups.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_PAIR_SHIFTS = tuple(range(120, -1, -10))
_UUID_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID_SET = (0x4000 << 64) | (0x8000 << 48)  # version 4, RFC 4122 variant


def new_request_id(now: float | None = None) -> str:
    """A ``req_…`` ID (HIST-4): 48 bits of milliseconds then 80 random bits, Crockford base32.

    IDs sort by creation time, which keeps the compact display (HIST-11) and lookups cheap.
    """
    millis = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | _IDS.getrandbits(80)
    return "req_" + "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


def new_uuid() -> str:
    """A random (version 4) UUID string, for upstream request and correlation IDs (not secrets).

    Formatted directly: ``str(uuid.UUID(...))`` costs several times more (issue #19).
    """
    text = f"{(_IDS.getrandbits(128) & _UUID_CLEAR) | _UUID_SET:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def new_hex_id(nbytes: int = 12) -> str:
    """``nbytes`` random bytes as lower-case hex, for identifiers that are not secrets (the IDs of
    translated answers, messages and tool calls): ``secrets.token_hex`` would be a system call on
    every translated call (issue #19)."""
    return f"{_IDS.getrandbits(nbytes * 8):0{nbytes * 2}x}"


def new_secret_token(nbytes: int = 32) -> str:
    """``nbytes`` random bytes as unpadded base64url."""
    return base64.urlsafe_b64encode(secrets.token_bytes(nbytes)).rstrip(b"=").decode("ascii")


def sha256_hex(value: str) -> str:
    """The hex SHA-256 digest of a UTF-8 string: how keys and session tokens are stored."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()
