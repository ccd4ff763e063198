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


#: The Python types a parsed JSON value of each JSON type has (exact: ``bool`` is not an integer).
_PYTHON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    STRING: (str,),
    NUMBER: (int, float),
    INTEGER: (int,),
    BOOLEAN: (bool,),
    OBJECT: (dict,),
    ARRAY: (list,),
    NULL: (type(None),),
}


@dataclass(frozen=True, slots=True)
class Field:
    """The types a field may have; for an object its known fields, for an array its items."""

    kinds: frozenset[str]
    #: The exact Python types of the allowed values: one set lookup a check (``type(v) in …``).
    types: frozenset[type]
    fields: Mapping[str, Field] | None = None
    items: Field | None = None


def field_of(
    names: tuple[str, ...], fields: Mapping[str, Field] | None = None, items: Field | None = None
) -> Field:
    """A field of the JSON types ``names`` (its known fields when an object, its items when an array)."""
    types = frozenset(python for kind in names for python in _PYTHON_TYPES[kind])
    return Field(frozenset(names), types, fields, items)


def kinds(*names: str) -> Field:
    return field_of(names)


def obj(fields: Mapping[str, Field] | None = None, *extra: str) -> Field:
    return field_of((OBJECT, *extra), fields=fields)


def arr(items: Field | None = None, *extra: str) -> Field:
    return field_of((ARRAY, *extra), items=items)


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


def _named(kind: str) -> str:
    return _ARTICLE.get(kind, f"a {kind}")


def _expected(field: Field) -> str:
    names = sorted(kind for kind in field.kinds if kind != NULL)
    return " or ".join(_named(kind) for kind in names) or "null"


def _wrong(field: Field, value: Any, param: str) -> tuple[str, str]:
    return param, f"'{param}' must be {_expected(field)}, not {_named(kind_of(value))}."


def field_problem(
    spec: Mapping[str, Field], body: Mapping[str, Any], prefix: str = ""
) -> tuple[str, str] | None:
    """``(param, message)`` for the first known field of the wrong type; ``None`` when all fit.

    Walks only the fields the body has; a field's check is one set lookup of its value's type
    (measured in BENCHMARKS.md: a few microseconds for a usual body, array items included).
    """
    for name, value in body.items():
        field = spec.get(name)
        if field is None:
            continue  # unknown: passes through
        if type(value) not in field.types:
            return _wrong(field, value, f"{prefix}{name}")
        if field.fields is not None and type(value) is dict:
            problem = field_problem(field.fields, value, f"{prefix}{name}.")
            if problem is not None:
                return problem
        elif field.items is not None and type(value) is list:
            problem = _items_problem(field.items, value, f"{prefix}{name}")
            if problem is not None:
                return problem
    return None


def _items_problem(items: Field, values: list[Any], param: str) -> tuple[str, str] | None:
    types, fields = items.types, items.fields
    for index, value in enumerate(values):
        if type(value) not in types:
            return _wrong(items, value, f"{param}[{index}]")
        if fields is not None and type(value) is dict:
            problem = field_problem(fields, value, f"{param}[{index}].")
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
