from __future__ import annotations

import re
import uuid

from sublane_core import new_request_id, new_secret_token, new_uuid, sha256_hex


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
