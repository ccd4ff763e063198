"""The history filters of HIST-8, read from a query string and checked before any query runs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from sublane_history._rows import OUTCOMES

MAX_ID = 2**63 - 1


class InvalidFilter(ValueError):
    """A filter value that cannot be used; the message names the parameter, never echoes much of it."""


@dataclass(frozen=True, slots=True)
class HistoryFilter:
    """What to show. Every field narrows; ``None`` means "any".

    ``since`` is the ``from`` parameter (inclusive) and ``until`` is exclusive, both Unix seconds.
    ``cursor`` is the ID of the last record already seen: the page holds older records.
    """

    outcome: str | None = None
    model: str | None = None
    key_id: int | None = None
    request_id: str | None = None
    since: float | None = None
    until: float | None = None
    user_id: int | None = None
    account_id: int | None = None
    cursor: int | None = None

    @classmethod
    def from_query(cls, params: Mapping[str, str], *, admin: bool) -> HistoryFilter:
        """Filters from query parameters; empty values mean "any", unknown parameters are ignored.

        ``user_id`` and ``account_id`` are read for admins only: for anyone else they (like a
        ``scope``) are ignored, so no parameter can widen personal history (HIST-7).
        """

        def value(name: str) -> str | None:
            raw = params.get(name)
            return raw.strip() if raw is not None and raw.strip() else None

        outcome = value("outcome")
        if outcome is not None and outcome not in OUTCOMES:
            raise InvalidFilter(f"outcome must be one of {', '.join(OUTCOMES)}")
        return cls(
            outcome=outcome,
            model=_bounded(value("model"), "model", 128),
            key_id=_identifier(value("key_id"), "key_id"),
            request_id=_bounded(value("request_id"), "request_id", 64),
            since=_seconds(value("from"), "from"),
            until=_seconds(value("until"), "until"),
            user_id=_identifier(value("user_id"), "user_id") if admin else None,
            account_id=_identifier(value("account_id"), "account_id") if admin else None,
            cursor=_identifier(value("cursor"), "cursor"),
        )


def _bounded(raw: str | None, name: str, limit: int) -> str | None:
    if raw is not None and len(raw) > limit:
        raise InvalidFilter(f"{name} is longer than {limit} characters")
    return raw


def _identifier(raw: str | None, name: str) -> int | None:
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not 1 <= int(raw) <= MAX_ID:
        raise InvalidFilter(f"{name} must be a positive integer")
    return int(raw)


def _seconds(raw: str | None, name: str) -> float | None:
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        raise InvalidFilter(f"{name} must be Unix seconds") from None
    if not math.isfinite(seconds):
        raise InvalidFilter(f"{name} must be Unix seconds")
    return seconds
