"""The JSON types a client protocol's published schema fixes for the fields SubLane knows (OPS-1).

A field the gateway reads, translates or forwards as known must have the type the protocol's
schema gives it, or the request is refused with 400 in the client's shape before anything is sent
upstream: a member's ``"reasoning": 5`` must never become an upstream failure that cools a model
for everyone. Unknown fields pass through unchecked (the upstream decides), and so does ``null``
for an optional field (the OpenAI and Google APIs take it as "not set").

Each protocol registers a spec, ``{field: Field}``; :func:`field_problem` walks the body against
it in one pass over the fields the body has, nested objects and array items included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sublane_core import WireProtocol

#: JSON type names as the schemas write them.
STRING: Final = "string"
NUMBER: Final = "number"
INTEGER: Final = "integer"
BOOLEAN: Final = "boolean"
OBJECT: Final = "object"
ARRAY: Final = "array"
NULL: Final = "null"

_ARTICLE = {INTEGER: "an integer", ARRAY: "an array", OBJECT: "an object"}


@dataclass(frozen=True, slots=True)
class Field:
    """The types a field may have; for an object its known fields, for an array its items."""

    kinds: frozenset[str]
    fields: Mapping[str, Field] | None = None
    items: Field | None = None


def kinds(*names: str) -> Field:
    return Field(frozenset(names))


def obj(fields: Mapping[str, Field] | None = None, *extra: str) -> Field:
    return Field(frozenset((OBJECT, *extra)), fields=fields)


def arr(items: Field | None = None, *extra: str) -> Field:
    return Field(frozenset((ARRAY, *extra)), items=items)


def kind_of(value: Any) -> str:
    """The JSON type of a parsed value (``integer`` is also a ``number``)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, list):
        return ARRAY
    return OBJECT if isinstance(value, Mapping) else "unknown"


def _accepts(field: Field, kind: str) -> bool:
    return kind in field.kinds or (kind == INTEGER and NUMBER in field.kinds)


def _named(kind: str) -> str:
    return _ARTICLE.get(kind, f"a {kind}")


def _expected(field: Field) -> str:
    names = sorted(kind for kind in field.kinds if kind != NULL)
    return " or ".join(_named(kind) for kind in names) or "null"


def field_problem(spec: Mapping[str, Field], body: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(param, message)`` for the first known field of the wrong type; ``None`` when all fit."""
    stack: list[tuple[Mapping[str, Field], Mapping[str, Any], str]] = [(spec, body, "")]
    while stack:
        fields, value, prefix = stack.pop()
        for name, inner in value.items():
            field = fields.get(name)
            if field is None:
                continue  # unknown: passes through
            problem = _check(field, inner, f"{prefix}{name}", stack)
            if problem is not None:
                return problem
    return None


def _check(
    field: Field,
    value: Any,
    param: str,
    stack: list[tuple[Mapping[str, Field], Mapping[str, Any], str]],
) -> tuple[str, str] | None:
    kind = kind_of(value)
    if not _accepts(field, kind):
        return param, f"'{param}' must be {_expected(field)}, not {_named(kind)}."
    if kind == OBJECT and field.fields:
        stack.append((field.fields, value, f"{param}."))
    elif kind == ARRAY and field.items is not None:
        for index, item in enumerate(value):
            problem = _check(field.items, item, f"{param}[{index}]", stack)
            if problem is not None:
                return problem
    return None


_SPECS: dict[WireProtocol, Mapping[str, Field]] = {}


def register_field_spec(protocol: WireProtocol, spec: Mapping[str, Field]) -> None:
    _SPECS[protocol] = spec


def body_field_problem(protocol: WireProtocol, body: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(param, message)`` when a known field of a ``protocol`` body has the wrong type."""
    spec = _SPECS.get(protocol)
    return None if spec is None else field_problem(spec, body)
