"""JSON Schema ⇄ the OpenAPI subset that Gemini function declarations and ``responseSchema`` take.

**To Gemini** (:func:`to_gemini_schema`, :func:`gemini_parameters`): Gemini's ``Schema`` is a small
OpenAPI 3.0 subset; a declaration whose schema holds anything else is refused with 400
``INVALID_ARGUMENT``. The reducer keeps only the keys of :data:`GEMINI_KEYS` and rewrites what has
an equivalent:

- ``$ref`` into ``$defs``/``definitions`` (any local JSON pointer) is inlined, at most
  :data:`MAX_REF_DEPTH` deep; a recursive reference (one already being inlined) or one that does not
  resolve is cut to a plain ``{"type": "OBJECT"}``. A budget of :data:`MAX_NODES` schema nodes and
  :data:`MAX_DEPTH` levels bounds the work on any input (inlining can otherwise grow exponentially);
  past it the rest is cut the same way;
- types are upper-case (``OBJECT``, ``STRING``…, the names of Gemini's ``Type`` enum); a type list
  with ``"null"`` becomes one type plus ``nullable: true``, several non-null types an ``anyOf``;
- ``anyOf``/``oneOf`` with a ``null`` branch become ``nullable``, a single remaining branch is merged
  into its parent; ``allOf`` branches are merged (properties and ``required`` united);
- ``const`` → ``enum: [const]``; Gemini enums are strings: a string (or untyped) schema gets its
  values as strings, a numeric or boolean one loses the enum and names the values in its
  description instead (the model still sees them; the type of the arguments is kept);
- ``required`` keeps only names that are properties; ``format`` only the formats Gemini knows;
  ``$schema``, ``$id``, ``additionalProperties``, ``patternProperties``, ``default``, ``examples``,
  ``title`` and every other keyword are dropped.

A declaration's ``parameters`` must be an ``OBJECT`` with at least one property (Gemini answers
"properties: should be non-empty for OBJECT type" otherwise): :func:`gemini_parameters` gives
``None`` for a parameterless tool, and the declaration then has no ``parameters`` at all.

**From Gemini** (:func:`to_json_schema`): a client's OpenAPI ``parameters`` (upper-case types,
``nullable``) becomes a plain JSON Schema (lower-case types, ``["string", "null"]``); a
``parametersJsonSchema`` is JSON Schema already and is used as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

GEMINI_KEYS: Final = frozenset(
    {
        "type",
        "description",
        "enum",
        "properties",
        "required",
        "items",
        "nullable",
        "format",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "anyOf",
    }
)
_TYPES: Final = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_FORMATS: Final = frozenset({"enum", "date-time", "int32", "int64", "float", "double"})
MAX_REF_DEPTH: Final = 8
MAX_DEPTH: Final = 32
MAX_NODES: Final = 2000
_CUT: Final = {"type": "OBJECT"}


def gemini_parameters(schema: Any) -> dict[str, Any] | None:
    """A function's ``parameters`` for Gemini: an ``OBJECT`` with properties, or ``None``."""
    reduced = to_gemini_schema(schema)
    if reduced.get("type") != "OBJECT" or not reduced.get("properties"):
        return None
    return reduced


def to_gemini_schema(schema: Any) -> dict[str, Any]:
    """``schema`` (any JSON value) reduced to what Gemini's ``Schema`` accepts; never raises."""
    return _Reducer(schema).reduce(schema, 0, ())


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _type_names(value: Any) -> list[str]:
    """The JSON type names of a ``type`` keyword (a string or a list), lower-case, in order."""
    names = value if isinstance(value, list) else [value]
    out: list[str] = []
    for name in names:
        if isinstance(name, str) and name.lower() not in out:
            out.append(name.lower())
    return out


def _is_null_schema(branch: Any) -> bool:
    if not isinstance(branch, Mapping):
        return False
    if _type_names(branch.get("type")) == ["null"]:
        return True
    return ("const" in branch and branch["const"] is None) or branch.get("enum") == [None]


class _Reducer:
    """One reduction: the root (for references) and the node budget."""

    __slots__ = ("_nodes", "_root")

    def __init__(self, root: Any) -> None:
        self._root = root
        self._nodes = 0

    def _resolve(self, ref: str) -> Any:
        """The schema a local JSON pointer (``#/$defs/Name``) names, ``None`` when it names none."""
        if not ref.startswith("#"):
            return None
        target: Any = self._root
        for raw in ref[1:].split("/")[1:]:
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and key in target:
                target = target[key]
            elif isinstance(target, list) and key.isascii() and key.isdigit() and int(key) < len(target):
                target = target[int(key)]
            else:
                return None
        return target if isinstance(target, Mapping) else None

    def reduce(self, schema: Any, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(schema, Mapping):
            return {}
        self._nodes += 1
        if depth > MAX_DEPTH or self._nodes > MAX_NODES:
            return dict(_CUT)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._resolve(ref)
            if target is None or ref in refs or len(refs) >= MAX_REF_DEPTH:
                cut = dict(_CUT)
                if isinstance(schema.get("description"), str):
                    cut["description"] = schema["description"]
                return cut
            siblings = {key: value for key, value in schema.items() if key != "$ref"}
            return self.reduce({**target, **siblings}, depth + 1, (*refs, ref))
        merged = self._merge_all_of(schema)
        return self._reduce_plain(merged, depth, refs)

    def _merge_all_of(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        branches = schema.get("allOf")
        if not isinstance(branches, list) or not branches:
            return schema
        merged: dict[str, Any] = {key: value for key, value in schema.items() if key != "allOf"}
        properties: dict[str, Any] = (
            dict(merged.get("properties") or {}) if isinstance(merged.get("properties"), Mapping) else {}
        )
        required: list[Any] = (
            list(merged.get("required") or []) if isinstance(merged.get("required"), list) else []
        )
        for branch in branches:
            if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
                branch = self._resolve(branch["$ref"]) or {}
            if not isinstance(branch, Mapping):
                continue
            if isinstance(branch.get("properties"), Mapping):
                for name, value in branch["properties"].items():
                    properties.setdefault(name, value)
            if isinstance(branch.get("required"), list):
                required.extend(name for name in branch["required"] if name not in required)
            for key, value in branch.items():
                if key not in ("properties", "required", "allOf"):
                    merged.setdefault(key, value)
        if properties:
            merged["properties"] = properties
            merged.setdefault("type", "object")
        if required:
            merged["required"] = required
        return merged

    def _reduce_plain(self, schema: Mapping[str, Any], depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        nullable = schema.get("nullable") is True
        names = _type_names(schema.get("type"))
        if "null" in names:
            nullable = True
            names.remove("null")
        known = [name for name in names if name in _TYPES]
        if len(known) > 1:
            return self._type_union(schema, known, nullable, depth, refs)
        if isinstance(schema.get("description"), str):
            out["description"] = schema["description"]
        kind = _TYPES[known[0]] if known else self._inferred_type(schema)
        union = self._union(schema, depth, refs)
        if union is not None:
            branches, branch_nullable = union
            nullable = nullable or branch_nullable
            if len(branches) == 1 and kind is None:
                single = branches[0]
                for key, value in single.items():
                    out.setdefault(key, value)
                kind = out.pop("type", None)
                nullable = nullable or out.pop("nullable", False) is True
            elif branches:
                out["anyOf"] = branches
        if kind is not None:
            out["type"] = kind
        self._enum(schema, out)
        self._keywords(schema, out, depth, refs)
        if nullable:
            out["nullable"] = True
        return out

    def _inferred_type(self, schema: Mapping[str, Any]) -> str | None:
        if isinstance(schema.get("properties"), Mapping):
            return "OBJECT"
        if "items" in schema or "prefixItems" in schema:
            return "ARRAY"
        return None

    def _type_union(
        self, schema: Mapping[str, Any], names: list[str], nullable: bool, depth: int, refs: tuple[str, ...]
    ) -> dict[str, Any]:
        """``type: [a, b]``: one ``anyOf`` branch per type, each with the keywords that fit it."""
        rest = {key: value for key, value in schema.items() if key not in ("type", "description", "nullable")}
        branches = [self._reduce_plain({**rest, "type": name}, depth + 1, refs) for name in names]
        out: dict[str, Any] = {}
        if isinstance(schema.get("description"), str):
            out["description"] = schema["description"]
        out["anyOf"] = branches
        if nullable:
            out["nullable"] = True
        return out

    def _union(
        self, schema: Mapping[str, Any], depth: int, refs: tuple[str, ...]
    ) -> tuple[list[dict[str, Any]], bool] | None:
        """The reduced non-null branches of ``anyOf``/``oneOf`` and whether a null branch was there."""
        raw: list[Any] = []
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                raw.extend(schema[key])
        if not raw:
            return None
        nullable = any(_is_null_schema(branch) for branch in raw)
        branches = [
            self.reduce(branch, depth + 1, refs)
            for branch in raw
            if isinstance(branch, Mapping) and not _is_null_schema(branch)
        ]
        return [branch for branch in branches if branch], nullable

    def _enum(self, schema: Mapping[str, Any], out: dict[str, Any]) -> None:
        values: Any = schema.get("enum")
        if not isinstance(values, list) and "const" in schema:
            values = [schema["const"]]
        if not isinstance(values, list):
            return
        if None in values:
            out["nullable"] = True
        present = [value for value in values if value is not None]
        if not present:
            return
        kind = out.get("type")
        if kind is None and all(not isinstance(value, str) for value in present):
            kind = out["type"] = _value_type(present)
        if kind in (None, "STRING"):
            strings: list[str] = []
            for value in present:
                text = value if isinstance(value, str) else _render(value)
                if text not in strings:
                    strings.append(text)
            out["type"] = "STRING"
            out["enum"] = strings
            return
        shown = ", ".join(_render(value) for value in present)
        description = out.get("description")
        out["description"] = f"{description} (one of: {shown})" if description else f"One of: {shown}."

    def _keywords(
        self, schema: Mapping[str, Any], out: dict[str, Any], depth: int, refs: tuple[str, ...]
    ) -> None:
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            out["format"] = fmt
        for key in ("minimum", "maximum"):
            if _is_number(schema.get(key)):
                out[key] = schema[key]
        for key in ("minItems", "maxItems"):
            if _is_count(schema.get(key)):
                out[key] = schema[key]
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and out.get("type") in (None, "OBJECT"):
            reduced = {
                name: self.reduce(value, depth + 1, refs)
                for name, value in properties.items()
                if isinstance(name, str)
            }
            out["properties"] = reduced
            required = schema.get("required")
            if isinstance(required, list):
                names = []
                for name in required:
                    if isinstance(name, str) and name in reduced and name not in names:
                        names.append(name)
                if names:
                    out["required"] = names
        items = schema.get("items")
        if not isinstance(items, Mapping | list):
            items = schema.get("prefixItems")
        if isinstance(items, list):
            items = {"anyOf": items} if len(items) != 1 else items[0]
        if isinstance(items, Mapping) and out.get("type") in (None, "ARRAY"):
            out["items"] = self.reduce(items, depth + 1, refs)


def _value_type(values: list[Any]) -> str | None:
    """The Gemini type all of ``values`` share (``None``: mixed, or not scalars)."""
    if all(isinstance(value, bool) for value in values):
        return "BOOLEAN"
    if all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        return "INTEGER"
    if all(_is_number(value) for value in values):
        return "NUMBER"
    return None


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------------------------------
# Gemini (OpenAPI) → JSON Schema
# --------------------------------------------------------------------------------------------------

_JSON_KEEP: Final = frozenset(
    {
        "description",
        "enum",
        "format",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "pattern",
        "title",
        "default",
    }
)


def to_json_schema(schema: Any, depth: int = 0) -> dict[str, Any]:
    """A Gemini ``Schema`` (OpenAPI: upper-case ``type``, ``nullable``) as a plain JSON Schema."""
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return {}
    out: dict[str, Any] = {key: schema[key] for key in _JSON_KEEP if key in schema}
    kind = schema.get("type")
    name = kind.lower() if isinstance(kind, str) and kind.lower() in _TYPES else None
    nullable = schema.get("nullable") is True
    if name is not None:
        out["type"] = [name, "null"] if nullable else name
    if isinstance(schema.get("properties"), Mapping):
        out["properties"] = {
            str(key): to_json_schema(value, depth + 1) for key, value in schema["properties"].items()
        }
    if isinstance(schema.get("required"), list):
        out["required"] = [name for name in schema["required"] if isinstance(name, str)]
    if isinstance(schema.get("items"), Mapping):
        out["items"] = to_json_schema(schema["items"], depth + 1)
    if isinstance(schema.get("anyOf"), list):
        branches = [to_json_schema(branch, depth + 1) for branch in schema["anyOf"]]
        if nullable and name is None:
            branches.append({"type": "null"})
        out["anyOf"] = branches
    return out
