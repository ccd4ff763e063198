"""What importing a credential file yields, whatever the provider."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_TOKEN_CHARS = 16_384


class CredentialFormatError(ValueError):
    """The credential file is not of a shape the provider writes. The message names no secret."""


class CredentialsRefused(Exception):
    """The upstream did not accept the credentials when they were checked before storing (PAID-1:
    an API key that cannot list models). The message says why and names no secret."""


@dataclass(frozen=True, slots=True)
class AccountIdentity:
    """Who the upstream account is, as far as the credentials tell (never a secret)."""

    email: str | None = None
    plan: str | None = None
    subject: str | None = None  # upstream account / workspace / project id


@dataclass(frozen=True, slots=True)
class ImportedCredentials:
    """A normalized credential bundle (to be encrypted) with its expiry and identity."""

    provider: str
    bundle: dict[str, Any] = field(repr=False)  # the secrets: never in a repr
    expires_at: float | None
    identity: AccountIdentity = field(default_factory=AccountIdentity)


def require_token(data: Mapping[str, Any], key: str, where: str) -> str:
    """``data[key]`` as a plausible token string, else :class:`CredentialFormatError`."""
    token = optional_token(data, key, where)
    if token is None:
        raise CredentialFormatError(f"{where} has no {key!r}")
    return token


def optional_token(data: Mapping[str, Any], key: str, where: str) -> str | None:
    """``data[key]`` as a token string when present and non-empty; reject anything else."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise CredentialFormatError(f"{where}: {key!r} must be a string")
    # A token goes into a header: visible ASCII only (RFC 6750's b64token is narrower still); a
    # control character, a lone surrogate or any other text could be neither stored nor sent.
    if (
        len(value) > MAX_TOKEN_CHARS
        or not (value.isascii() and value.isprintable())
        or any(ch.isspace() for ch in value)
    ):
        raise CredentialFormatError(f"{where}: {key!r} is not a token")
    return value


def optional_text(data: Mapping[str, Any], key: str, limit: int = 256, *, header: bool = False) -> str | None:
    """A short informational string (email, plan, project), or ``None`` when absent or unusable:
    not text, too long, or holding a control character or a lone surrogate (which no column or
    header can hold). ``header``: a value sent in a header must be ASCII too."""
    value = data.get(key)
    if (
        isinstance(value, str)
        and value
        and len(value) <= limit
        and value.isprintable()
        and (value.isascii() or not header)
    ):
        return value
    return None


def require_object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` as a JSON object, else :class:`CredentialFormatError`."""
    if not isinstance(value, Mapping):
        raise CredentialFormatError(f"{where} must be a JSON object")
    return value


MAX_TIMESTAMP = 1e11  # year ~5138: later than any real expiry, small enough for every store


def parse_timestamp(value: Any) -> float | None:
    """Unix seconds from seconds, milliseconds or an ISO-8601 string; ``None`` when unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # OPS-1: a 400-digit number is not a time
            return None
        seconds = number / 1000 if number > 10**11 else number
        return seconds if 0 < seconds < MAX_TIMESTAMP else None  # also refuses NaN and infinity
    if isinstance(value, str) and value:
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        try:
            seconds = parsed.timestamp()
        except (OverflowError, ValueError, OSError):
            return None
        return seconds if 0 < seconds < MAX_TIMESTAMP else None
    return None
