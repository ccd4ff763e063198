"""Fake credentials: unsigned JWTs for OpenAI and opaque provider-shaped strings for the rest."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

__all__ = ["TokenMint", "decode_jwt_payload", "encode_unsigned_jwt"]

OPENAI_AUTH_CLAIM = "https://api.openai.com/auth"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def encode_unsigned_jwt(payload: dict[str, Any]) -> str:
    """A JWT with `alg: none` and a placeholder signature segment.

    Adapters only base64url-decode the middle segment, so the signature is never checked; it is
    non-empty because some parsers insist on three non-empty segments.
    """
    header = {"alg": "none", "typ": "JWT", "kid": "sublane-sim"}
    parts = [
        _b64url(json.dumps(header, separators=(",", ":")).encode()),
        _b64url(json.dumps(payload, separators=(",", ":")).encode()),
        _b64url(b"sublane-sim-unsigned"),
    ]
    return ".".join(parts)


def decode_jwt_payload(token: str) -> dict[str, Any]:
    """Decode the claims of a JWT without verifying it."""
    segment = token.split(".")[1]
    padded = segment + "=" * (-len(segment) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return claims


class TokenMint:
    """Deterministic random strings for ids and secrets (seeded, so runs are reproducible)."""

    _ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def text(self, length: int) -> str:
        return "".join(self._rng.choice(self._ALPHABET) for _ in range(length))

    def hex(self, length: int) -> str:
        return "".join(self._rng.choice("0123456789abcdef") for _ in range(length))

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def digits(self, length: int) -> str:
        return "".join(self._rng.choice("0123456789") for _ in range(length))
