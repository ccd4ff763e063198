"""The hot-path JSON helper behaves as the stdlib does: same values, same refusals (OPS-1)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sublane_core import NotStrictJson, json_dumps, json_loads, json_loads_strict, json_loads_text

_SETTINGS = settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))

# Pieces that make texts on both sides of every acceptance rule: literals the stdlib takes and
# orjson/jiter may not (NaN, lone surrogate escapes, huge numbers, BOM), control characters, junk.
_TOKENS = st.sampled_from(
    [
        "{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "d800", "dc00", "\\ud83d\\ude00", "NaN",
        "Infinity", "-Infinity", "-", "0", "1", "9", ".", "e", "E", "+", "true", "false", "null", " ",
        "\t", "\n", "\r", "\x0c", "\x00", "\x1f", "\x7f", "é", "\ud800", "a", "00", "1e400",
        "12345678901234567890", "-9223372036854775809", "\ufeff", "tru", "nan", '"k"',
    ]
)  # fmt: skip
_ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=12)  # surrogates too
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 2, max_value=2**64 + 2)
    | st.integers(min_value=-(2**63) - 2, max_value=-(2**63) + 2)
    | st.floats()
    | _ANY_TEXT
)
_VALUES = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_ANY_TEXT, inner, max_size=4),
    max_leaves=16,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types and key order; NaN equals NaN and -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[key], b[key]) for key in a)
    return bool(a == b)


def _outcome(function: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "value", function(*args, **kwargs)
    except Exception as error:  # the class is what must match
        return "error", type(error)


def _assert_loads_like_stdlib(text: str | bytes) -> None:
    ours, stdlib = _outcome(json_loads, text), _outcome(json.loads, text)
    assert ours[0] == stdlib[0], (text, ours, stdlib)
    if ours[0] == "value":
        assert _same(ours[1], stdlib[1]), (text, ours, stdlib)
    else:
        assert ours[1] is stdlib[1], (text, ours, stdlib)


@_SETTINGS
@given(st.lists(_TOKENS, max_size=24).map("".join), st.booleans())
def test_ops_1_loads_accepts_and_refuses_what_the_stdlib_does(text: str, as_bytes: bool) -> None:
    _assert_loads_like_stdlib(text.encode("utf-8", "surrogatepass") if as_bytes else text)


@_SETTINGS
@given(st.binary(max_size=24) | _ANY_TEXT)
def test_ops_1_loads_of_arbitrary_input_matches_the_stdlib(text: str | bytes) -> None:
    _assert_loads_like_stdlib(text)


@_SETTINGS
@given(_VALUES, st.sampled_from([{}, {"ensure_ascii": False}, {"indent": 1}]))
def test_ops_1_loads_of_stdlib_json_texts_matches_the_stdlib(value: Any, options: dict[str, Any]) -> None:
    _assert_loads_like_stdlib(json.dumps(value, **options))


@_SETTINGS
@given(_VALUES, st.booleans(), st.booleans(), st.sampled_from(["strict", "surrogatepass"]))
def test_dumps_writes_the_value_the_stdlib_writes_or_fails_as_it_does(
    value: Any, ensure_ascii: bool, allow_nan: bool, errors: str
) -> None:
    def stdlib(item: Any) -> bytes:
        text = json.dumps(item, separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=allow_nan)
        return text.encode("utf-8", errors)

    options = {"ensure_ascii": ensure_ascii, "allow_nan": allow_nan, "errors": errors}
    ours, theirs = _outcome(json_dumps, value, **options), _outcome(stdlib, value)
    assert ours[0] == theirs[0], (value, ours, theirs)
    if ours[0] == "value":
        mine, stdlib_value = (json.loads(raw.decode("utf-8", errors)) for raw in (ours[1], theirs[1]))
        assert _same(mine, stdlib_value)
    else:
        assert ours[1] is theirs[1]


@_SETTINGS
@given(_VALUES)
def test_loads_of_dumps_gives_the_value_back(value: Any) -> None:
    assert _same(json_loads(json_dumps(value, ensure_ascii=True)), value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("18446744073709551616", 18446744073709551616),  # orjson would give a float
        ("-9223372036854775809", -9223372036854775809),
        ("1" + "0" * 400, 10**400),
        ('"\\ud800"', "\ud800"),
        (b'\xef\xbb\xbf{"a": 1}', {"a": 1}),  # bytes with a BOM: the stdlib takes them
        (b'"\xed\xa0\x80"', "\ud800"),  # an encoded surrogate: the stdlib's surrogatepass
        ("[1e400, -1e400]", [math.inf, -math.inf]),
    ],
)
def test_ops_1_numbers_and_text_orjson_would_change_keep_the_stdlib_value(
    text: str | bytes, expected: Any
) -> None:
    assert _same(json_loads(text), expected)


def test_ops_1_nan_and_infinity_parse_and_write_as_the_stdlib_does() -> None:
    value = json_loads('{"a": NaN, "b": Infinity, "c": -Infinity, "d": null}')
    assert math.isnan(value["a"]) and value["b"] == math.inf and value["c"] == -math.inf
    assert json_dumps(value) == b'{"a":NaN,"b":Infinity,"c":-Infinity,"d":null}'
    with pytest.raises(ValueError, match="not JSON compliant"):
        json_dumps(value, allow_nan=False)


def test_ops_1_refusals_keep_the_stdlib_error_class() -> None:
    with pytest.raises(RecursionError):
        json_loads("[" * 200_000 + "]" * 200_000)
    with pytest.raises(json.JSONDecodeError):
        json_loads("\ufeff{}")  # a str with a BOM: the stdlib refuses it
    with pytest.raises(TypeError):
        json_loads(memoryview(b"{}"))  # type: ignore[arg-type]
    with pytest.raises(UnicodeEncodeError):
        json_dumps({"text": "\ud800"})  # as json.dumps(…, ensure_ascii=False).encode() does
    assert json_dumps({"text": "\ud800"}, ensure_ascii=True) == b'{"text":"\\ud800"}'


def test_dumps_refuses_the_types_json_dumps_refuses() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for value in (Point(1), datetime.datetime(2026, 1, 1), b"bytes", {1, 2}):
        with pytest.raises(TypeError):
            json_dumps({"value": value})


def test_dumps_is_compact_utf8_and_keys_like_the_stdlib() -> None:
    assert json_dumps({"a": [1, 2.5, None, True], "é": "ü"}) == '{"a":[1,2.5,null,true],"é":"ü"}'.encode()
    assert json_dumps({1: "x", None: "y"}) == b'{"1":"x","null":"y"}'  # non-str keys: the stdlib's
    assert json_dumps(2**70) == b"1180591620717411303424"


@_SETTINGS
@given(
    st.lists(_TOKENS, max_size=24).map("".join).map(lambda t: t.encode("utf-8", "surrogatepass"))
    | st.binary(max_size=24)
)
def test_ops_1_loads_text_reads_bytes_as_loads_reads_them_decoded(data: bytes) -> None:
    """SSE data is decoded straight from its bytes: the value or error of the decoded text."""
    ours, decoded = _outcome(json_loads_text, data), _outcome(json_loads, data.decode("utf-8", "replace"))
    assert ours[0] == decoded[0], (data, ours, decoded)
    if ours[0] == "value":
        assert _same(ours[1], decoded[1]), (data, ours, decoded)
    else:
        assert ours[1] is decoded[1], (data, ours, decoded)


@pytest.mark.parametrize(
    "data",
    [
        b'{"t": NaN}',
        b'{"t": Infinity}',
        b'{"t": -Infinity}',
        b'{"t": 1e400}',
        b'{"t": -1E+999}',
        b'{"t": ' + b"9" * 400 + b".0}",
        b'{"t": "\xed\xa0\x80"}',  # a surrogate's UTF-8 bytes: not UTF-8 text
        '{"t": 1}'.encode("utf-16"),
        b'{"t": "\xff"}',
    ],
)
def test_ops_1_loads_strict_refuses_what_rfc_8259_does_not_allow(data: bytes) -> None:
    with pytest.raises(NotStrictJson):
        json_loads_strict(data)


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**63 - 1)  # wider ones are refused (below)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda children: st.lists(children) | st.dictionaries(st.text(), children),
        max_leaves=20,
    )
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_loads_strict_reads_every_json_text_as_json_loads_does(value: Any) -> None:
    data = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(NotStrictJson):  # a lone surrogate written raw: not UTF-8
            json_loads_strict(data)
        return
    assert json_loads_strict(data) == json.loads(data)
    assert json_loads_strict(json.dumps(value).encode()) == json.loads(json.dumps(value))  # escaped


def test_loads_strict_keeps_escaped_surrogates_and_big_strings_for_the_caller() -> None:
    assert json_loads_strict(b'{"t": "\\ud800"}') == {"t": "\ud800"}
    assert json_loads_strict(b'{"t": "1e400", "n": 1e300}') == {"t": "1e400", "n": 1e300}
    hashes = b'{"log": "commit 3e812a9 and 1e999 in prose", "sha": "9e4001"}'
    assert json_loads_strict(hashes) == json.loads(hashes)  # strings are never numbers
    assert json_loads_strict(b'{"n": 1e-400, "m": [2.5e+100]}') == {"n": 0.0, "m": [2.5e100]}


@pytest.mark.parametrize("number", [2**63, -(2**63) - 1, 2**70, -(2**200), 10**400])
def test_ops_1_integers_beyond_64_bits_are_refused(number: int) -> None:
    """OPS-1 (digits): ``"max_tokens": 2**70`` is no request an upstream reads."""
    with pytest.raises(NotStrictJson, match="64 bits"):
        json_loads_strict(b'{"a": [{"max_tokens": %d}]}' % number)


def test_ops_1_integers_within_64_bits_and_long_digit_strings_pass() -> None:
    edge = b'{"a": %d, "b": %d, "id": "12345678901234567890123", "f": 1.2345678901234567890123}'
    assert json_loads_strict(edge % (2**63 - 1, -(2**63))) == {
        "a": 2**63 - 1,
        "b": -(2**63),
        "id": "12345678901234567890123",
        "f": 1.2345678901234567890123,
    }
