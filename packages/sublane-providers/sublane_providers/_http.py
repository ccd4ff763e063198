"""Small HTTP facts every adapter shares."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping

MAX_RETRY_AFTER_S = 3600.0


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds from a ``Retry-After`` header when it is 1–3,600 s (COOL-1); ``None`` when missing or invalid.

    Both forms are read: delta-seconds and an HTTP date.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = parsed.timestamp() - now
    if seconds != seconds or not 1 <= seconds <= MAX_RETRY_AFTER_S:  # NaN or out of range
        return None
    return seconds


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header value by case-insensitive name (works for plain dicts too)."""
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, item in headers.items():
        if key.lower() == lowered:
            return item
    return None
