"""XLAT-2 tool definitions for Gemini: JSON Schema reduced to Gemini's ``Schema``, and back.

The reducer meets every kind of schema real clients send (MCP servers, pydantic models with
``$defs``, recursive trees), so besides the examples a property-based test feeds it arbitrary JSON
and schema-shaped values: it never raises, finishes quickly, and returns only keys Gemini accepts.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sublane_protocols.gemini import gemini_parameters, to_gemini_schema, to_json_schema
from sublane_protocols.gemini._schema import GEMINI_KEYS

GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}
FORMATS = {"enum", "date-time", "int32", "int64", "float", "double"}


def assert_gemini_schema(schema: Any, depth: int = 0) -> None:
    """Every node holds only whitelisted keys with values of the right shape."""
    assert isinstance(schema, dict)
    assert set(schema) <= GEMINI_KEYS, set(schema) - GEMINI_KEYS
    if "type" in schema:
        assert schema["type"] in GEMINI_TYPES
    if "enum" in schema:
        assert all(isinstance(value, str) for value in schema["enum"]) and schema["type"] == "STRING"
    if "format" in schema:
        assert schema["format"] in FORMATS
    if "nullable" in schema:
        assert schema["nullable"] is True
    if "description" in schema:
        assert isinstance(schema["description"], str)
    properties = schema.get("properties", {})
    assert isinstance(properties, dict)
    for value in properties.values():
        assert_gemini_schema(value, depth + 1)
    assert set(schema.get("required", [])) <= set(properties)
    if "items" in schema:
        assert_gemini_schema(schema["items"], depth + 1)
    for branch in schema.get("anyOf", []):
        assert_gemini_schema(branch, depth + 1)


# -- examples -----------------------------------------------------------------------------------------


def test_xlat_2_reduces_a_typical_tool_schema() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:tool",
        "title": "Args",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "path": {"type": "string", "description": "File path", "default": "a", "examples": ["b"]},
            "mode": {"const": "r"},
            "count": {"type": ["integer", "null"], "minimum": 0, "maximum": 9, "format": "int32"},
            "when": {"type": "string", "format": "uri"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "meta": {"type": "object", "patternProperties": {".*": {"type": "string"}}},
        },
        "required": ["path", "ghost"],
    }
    assert to_gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "path": {"type": "STRING", "description": "File path"},
            "mode": {"type": "STRING", "enum": ["r"]},
            "count": {"type": "INTEGER", "nullable": True, "format": "int32", "minimum": 0, "maximum": 9},
            "when": {"type": "STRING"},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": 1, "maxItems": 3},
            "meta": {"type": "OBJECT"},
        },
        "required": ["path"],
    }


def test_xlat_2_inlines_refs_and_cuts_recursion() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            },
            "Colour": {"enum": ["red", "green"]},
        },
        "definitions": {"Size": {"type": "integer"}},
        "properties": {
            "root": {"$ref": "#/$defs/Node", "description": "The tree"},
            "colour": {"$ref": "#/$defs/Colour"},
            "size": {"$ref": "#/definitions/Size"},
            "lost": {"$ref": "#/$defs/Missing"},
            "remote": {"$ref": "https://example.com/schema.json"},
        },
    }
    reduced = to_gemini_schema(schema)
    root = reduced["properties"]["root"]
    assert root["description"] == "The tree" and root["properties"]["name"] == {"type": "STRING"}
    assert root["properties"]["children"] == {"type": "ARRAY", "items": {"type": "OBJECT"}}  # cut
    assert reduced["properties"]["colour"] == {"type": "STRING", "enum": ["red", "green"]}
    assert reduced["properties"]["size"] == {"type": "INTEGER"}
    assert reduced["properties"]["lost"] == {"type": "OBJECT"}
    assert reduced["properties"]["remote"] == {"type": "OBJECT"}
    assert_gemini_schema(reduced)


def test_xlat_2_unions_become_nullable_or_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "maybe"},
            "b": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "c": {"type": ["string", "integer", "null"]},
            "d": {
                "allOf": [{"properties": {"x": {"type": "string"}}, "required": ["x"]}, {"description": "d"}]
            },
            "e": {"enum": [1, 2, None]},
            "f": {"type": "integer", "enum": [1, 2]},
        },
    }
    props = to_gemini_schema(schema)["properties"]
    assert props["a"] == {"description": "maybe", "type": "STRING", "nullable": True}
    assert props["b"] == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}
    assert props["c"] == {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": True}
    assert props["d"] == {
        "description": "d",
        "type": "OBJECT",
        "properties": {"x": {"type": "STRING"}},
        "required": ["x"],
    }
    assert props["e"] == {"type": "INTEGER", "nullable": True, "description": "One of: 1, 2."}
    assert props["f"] == {"type": "INTEGER", "description": "One of: 1, 2."}


def test_xlat_2_parameterless_tools_declare_no_parameters() -> None:
    assert gemini_parameters({"type": "object", "properties": {}}) is None
    assert gemini_parameters(None) is None
    assert gemini_parameters({"type": "string"}) is None
    assert gemini_parameters({"type": "object", "properties": {"a": {}}}) == {
        "type": "OBJECT",
        "properties": {"a": {}},
    }


def test_xlat_2_exponential_refs_stay_bounded() -> None:
    """Each definition refers to the next one four times: inlining all would be 4**12 nodes."""
    defs = {
        f"D{n}": {"type": "object", "properties": {f"p{k}": {"$ref": f"#/$defs/D{n + 1}"} for k in range(4)}}
        for n in range(12)
    }
    defs["D12"] = {"type": "string"}
    started = time.perf_counter()
    reduced = to_gemini_schema({"$defs": defs, "$ref": "#/$defs/D0"})
    assert time.perf_counter() - started < 2
    assert_gemini_schema(reduced)


def test_xlat_2_gemini_openapi_schema_to_json_schema() -> None:
    gemini = {
        "type": "OBJECT",
        "properties": {
            "path": {"type": "STRING", "description": "p", "nullable": True},
            "n": {"type": "INTEGER", "format": "int32", "minimum": 1},
            "list": {"type": "ARRAY", "items": {"type": "OBJECT", "properties": {"k": {"type": "BOOLEAN"}}}},
            "either": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}], "nullable": True},
            "odd": {"type": "TYPE_UNSPECIFIED", "propertyOrdering": ["x"]},
        },
        "required": ["path"],
    }
    assert to_json_schema(gemini) == {
        "type": "object",
        "properties": {
            "path": {"type": ["string", "null"], "description": "p"},
            "n": {"type": "integer", "format": "int32", "minimum": 1},
            "list": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "boolean"}}}},
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
            "odd": {},
        },
        "required": ["path"],
    }


# -- properties ----------------------------------------------------------------------------------------

_KEYWORDS = [
    "type", "properties", "items", "prefixItems", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
    "required", "enum", "const", "nullable", "format", "minimum", "maximum", "minItems", "maxItems",
    "description", "title", "default", "additionalProperties", "$schema", "examples",
]  # fmt: skip
_TYPE_NAMES = ["string", "number", "integer", "boolean", "array", "object", "null", "STRING", "OBJECT", "any"]
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_refs = st.sampled_from(["#", "#/$defs/A", "#/$defs/B", "#/definitions/A", "#/properties/x", "#/x/0", "nope"])


def _schema_like(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    values = (
        children
        | st.sampled_from(_TYPE_NAMES)
        | st.lists(st.sampled_from(_TYPE_NAMES), max_size=3)
        | _refs
        | st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=4) | st.sampled_from(["x", "A", "B"]), children, max_size=3)
    )
    return st.dictionaries(st.sampled_from(_KEYWORDS) | st.text(max_size=5), values, max_size=6)


_json_values = st.recursive(_scalars, _schema_like, max_leaves=40)


@settings(
    max_examples=200, deadline=timedelta(milliseconds=500), suppress_health_check=[HealthCheck.too_slow]
)
@given(_json_values)
def test_xlat_2_reducer_never_raises_and_keeps_only_gemini_keys(schema: Any) -> None:
    assert_gemini_schema(to_gemini_schema(schema))
    parameters = gemini_parameters(schema)
    assert parameters is None or (parameters["type"] == "OBJECT" and parameters["properties"])


@settings(
    max_examples=100, deadline=timedelta(milliseconds=500), suppress_health_check=[HealthCheck.too_slow]
)
@given(_json_values)
def test_xlat_2_json_schema_from_gemini_never_raises(schema: Any) -> None:
    assert isinstance(to_json_schema(schema), dict)
