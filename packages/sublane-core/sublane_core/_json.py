"""JSON on the model-request hot path: Rust parsers and encoders with the stdlib's exact semantics.

``loads`` decodes with jiter (pydantic's parser): integers of any size stay exact and ``NaN`` /
``Infinity`` parse as the stdlib parses them. orjson 3.13 turns an integer beyond 64 bits into a
float without an error, so it cannot decode here. Whatever jiter refuses (lone surrogate escapes,
a UTF-8 BOM, invalid UTF-8, nesting past its limit) goes to ``json.loads``, so the answer or the
error is the stdlib's.

``dumps`` encodes with orjson: compact UTF-8, the same JSON value as the stdlib's bytes. What orjson
refuses (a lone surrogate, an integer beyond 64 bits, a non-``str`` key, a type it does not know,
deep nesting) or would write differently (``NaN`` and the infinities become ``null`` in orjson) goes
to ``json.dumps`` with the caller's options. (orjson still writes enums and UUIDs, which
``json.dumps`` refuses; no caller hands it either.)

Measured on the 2-core bench machine: a 250-byte SSE event decodes in ~3 µs (stdlib ~11), a
collected Responses answer encodes in ~1.6 µs (stdlib ~33).
"""

from __future__ import annotations

import json
import math
from typing import Any

import jiter
import orjson

# orjson writes dataclasses and datetimes itself; json.dumps refuses them, and so must we.
_STDLIB_TYPES_ONLY = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``: the same value for what it accepts, its error for what it refuses."""
    try:
        if isinstance(data, str):
            return jiter.from_json(data.encode())  # a lone surrogate: UnicodeEncodeError, a ValueError
        if isinstance(data, bytes):
            return jiter.from_json(data)
    except ValueError:
        pass
    return json.loads(data)  # also what refuses types it does not take (memoryview, …)


class NotStrictJson(ValueError):
    """A body that RFC 8259 does not allow: not UTF-8 text, or a number that is not finite."""


#: Digits as ``0`` and ``E`` as ``e`` (signs are deleted): a number literal that may not fit a
#: float (a 3-digit exponent, or 309 digits in a row) then shows as ``e000`` or 309 zeros. One
#: ``bytes.translate`` and finds (C speed; a regular expression with a leading class took 840 us
#: on a 95 KB body, this about 100); only a hit walks the parsed value.
_NUMBER_SHAPES = bytes(
    ord("0") if chr(byte).isdigit() else ord("e") if byte == ord("E") else byte for byte in range(256)
)
_LONG_DIGITS = b"0" * 309
#: 19 digits in a row: the shortest literal that may be an integer beyond 64 bits (2**63 has 19).
_INT64_DIGITS = b"0" * 19
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


#: What may stand before a number literal in JSON (its sign is dropped from the translated bytes).
_BEFORE_NUMBER = frozenset(b":,[ \t\r\n")
_MAX_HITS = 256


def _maybe_overflow(shapes: bytes) -> bool:
    """Whether the body whose number shapes are ``shapes`` (``data.translate(_NUMBER_SHAPES, b"+-")``)
    may hold a number literal too large for a float (then the value is walked).

    An exponent of three digits is a hit only when the digits before it start right after what may
    precede a number (``:``, ``,``, ``[``, white space, a sign): a hash such as ``"3e812…"`` inside a
    string, common in a coding agent's history, is not one.
    """
    if shapes.find(_LONG_DIGITS) != -1:
        return True
    hits = 0
    at = shapes.find(b"e000")
    while at != -1:
        hits += 1
        if hits > _MAX_HITS:
            return True  # a body full of them: walking it is cheaper than looking on
        start = at
        while start > 0 and shapes[start - 1] in b"0.":
            start -= 1
        if start < at and (start == 0 or shapes[start - 1] in _BEFORE_NUMBER):
            return True
        at = shapes.find(b"e000", at + 1)
    return False


def loads_strict(data: bytes) -> Any:
    """``data`` as RFC 8259 JSON: UTF-8 text (no UTF-16, no encoded surrogates) and finite numbers
    only (no ``NaN``, ``Infinity``, or ``1e400`` read as infinity); integers within 64 bits (OPS-1:
    no upstream reads ``"max_tokens": 2**70``, and none must be sent it).

    Raises :class:`NotStrictJson` for what the RFC refuses and ``ValueError`` (or
    ``RecursionError``) for what is not JSON at all. Lone surrogate *escapes* (``\\ud800``) are
    valid JSON text and are left to the caller.
    """
    try:
        value = jiter.from_json(data, allow_inf_nan=False)
    except ValueError:
        try:
            text = data.decode("utf-8")  # strict: UTF-16 and encoded surrogates (ED A0 80) fail here
        except UnicodeDecodeError:
            raise NotStrictJson("The body is not UTF-8 text (RFC 8259).") from None
        value = json.loads(text, parse_constant=_refuse_constant)
    shapes = data.translate(_NUMBER_SHAPES, b"+-")  # signs dropped: one marker, ``e000``
    if _maybe_overflow(shapes) and _has_non_finite(value):
        raise NotStrictJson("Numbers must be finite (RFC 8259): a number too large for a double.")
    if shapes.find(_INT64_DIGITS) != -1 and _has_wide_integer(value):
        raise NotStrictJson("Integers must fit in 64 bits (-2**63 to 2**63 - 1).")
    return value


def _has_wide_integer(value: Any) -> bool:
    """Whether an integer beyond 64 bits sits anywhere in ``value`` (walked only when the body has
    19 digits in a row; nesting was bounded by the parser)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is int:
            if not _INT64_MIN <= item <= _INT64_MAX:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _refuse_constant(name: str) -> Any:
    raise NotStrictJson(f"{name} is not a JSON number (RFC 8259).")


def loads_text(data: bytes) -> Any:
    """``loads(data.decode("utf-8", "replace"))`` without the decode when ``data`` is valid UTF-8.

    For text still in its wire bytes (SSE data): what jiter takes is valid UTF-8, so decoding and
    encoding it again would give the same bytes back; anything else takes the decoded path.
    """
    try:
        return jiter.from_json(data)
    except ValueError:
        return loads(data.decode("utf-8", "replace"))


def dumps(value: Any, *, ensure_ascii: bool = False, allow_nan: bool = True, errors: str = "strict") -> bytes:
    """Compact JSON of ``value`` as UTF-8 bytes.

    Equal in value to ``json.dumps(value, separators=(",", ":"), ensure_ascii=…, allow_nan=…)
    .encode("utf-8", errors)``, which is what runs (and raises) for what orjson cannot write the
    same way. orjson writes non-ASCII characters as UTF-8 even when ``ensure_ascii`` is set: the
    option (and ``errors``) shape only that fallback, where lone surrogates can occur.
    """
    try:
        out = orjson.dumps(value, option=_STDLIB_TYPES_ONLY)
    except TypeError:  # orjson.JSONEncodeError
        out = None
    if out is None or (out.find(b"null") != -1 and _has_non_finite(value)):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=allow_nan)
        return text.encode("utf-8", errors)
    return out


def _has_non_finite(value: Any) -> bool:
    """Whether a ``NaN`` or an infinity sits anywhere in ``value`` (orjson wrote it as ``null``).

    Only runs when the output holds ``null``; orjson refused anything nested past its limit, so
    the walk is bounded.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
