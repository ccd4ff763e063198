from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from sublane_core import _ids, new_hex_id, new_request_id, new_secret_token, new_uuid, sha256_hex

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def _crockford_26(value: int) -> str:
    """The plain definition: 26 base-32 digits, most significant first."""
    return "".join(_CROCKFORD[(value >> (5 * (25 - i))) & 31] for i in range(26))


def test_request_ids_have_the_req_prefix_and_sort_by_time() -> None:
    first = new_request_id(now=1_800_000_000.000)
    second = new_request_id(now=1_800_000_000.001)
    assert re.fullmatch(r"req_[0-9a-hjkmnp-tv-z]{26}", first)
    assert first < second
    assert len({new_request_id() for _ in range(1000)}) == 1000


def test_secret_tokens_are_unpadded_base64url() -> None:
    token = new_secret_token(32)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", token)


def test_sha256_hex() -> None:
    assert sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_new_uuids_are_version_4_and_distinct() -> None:
    values = {new_uuid() for _ in range(1000)}
    assert len(values) == 1000
    for value in list(values)[:20]:
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and str(parsed) == value


def _with_random_bits(bits: int, width: int, make: Callable[[], str]) -> str:
    """``make()`` while the ID generator hands out ``bits`` (asked for ``width`` bits)."""

    class FixedBits:
        def getrandbits(self, k: int) -> int:
            assert k == width
            return bits

    real, _ids._IDS = _ids._IDS, FixedBits()  # type: ignore[assignment]
    try:
        return make()
    finally:
        _ids._IDS = real


@given(st.integers(min_value=0, max_value=(1 << 48) - 1), st.integers(min_value=0, max_value=(1 << 80) - 1))
def test_request_ids_are_the_crockford_digits_of_millis_then_random_bits(millis: int, bits: int) -> None:
    value = _with_random_bits(bits, 80, lambda: new_request_id(now=(millis + 0.5) / 1000))
    assert value == "req_" + _crockford_26((millis << 80) | bits)


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_new_uuid_formats_like_the_uuid_module(bits: int) -> None:
    assert _with_random_bits(bits, 128, new_uuid) == str(uuid.UUID(int=bits, version=4))


@given(st.integers(min_value=0, max_value=(1 << 96) - 1))
def test_hex_ids_are_the_random_bytes_in_lower_case_hex(bits: int) -> None:
    assert _with_random_bits(bits, 96, new_hex_id) == bits.to_bytes(12, "big").hex()


def test_hex_ids_are_distinct_and_sized() -> None:
    values = {new_hex_id() for _ in range(1000)} | {new_hex_id(4)}
    assert len(values) == 1001
    assert {len(value) for value in values} == {24, 8}
