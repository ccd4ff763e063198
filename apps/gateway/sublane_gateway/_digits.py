"""OPS-1 (digits): numbers, codes, ids and cursors are ASCII digits only; any other digit → 400.

Python's ``str.isdigit()`` and ``int()`` take every script's digits (``"١٢٣"`` is 123 to ``int``,
``"²"`` is a digit to ``isdigit`` and a ``ValueError`` to ``int``), and ``hmac.compare_digest``
raises ``TypeError`` on non-ASCII text: each was a 500 somewhere. Text read as a number or a code
goes through these first.
"""

from __future__ import annotations

from sublane_core import SubLaneError

#: The largest id or cursor a database column holds (a signed 64-bit integer).
MAX_INT64 = 2**63 - 1


def is_ascii_number(text: str) -> bool:
    """Whether ``text`` is one or more ASCII digits (``0``–``9``) and nothing else."""
    return text.isascii() and text.isdigit()


def ascii_int(text: str, name: str, *, maximum: int = MAX_INT64) -> int:
    """``text`` (ASCII digits, at most ``maximum``) as an integer; else 400 ``invalid_request``
    naming ``name``."""
    if not is_ascii_number(text) or len(text) > 19 or int(text) > maximum:
        raise SubLaneError("invalid_request", f"{name}: must be a number written with the digits 0-9.")
    return int(text)


def refuse_foreign_digits(text: str, name: str) -> None:
    """400 ``invalid_request`` when ``text`` holds a digit other than ``0``–``9`` (a code written in
    another script's digits is never right, and must not reach a comparison that raises on it)."""
    if not text.isascii() and any(char.isdigit() for char in text):
        raise SubLaneError("invalid_request", f"{name}: write digits as 0-9.")
