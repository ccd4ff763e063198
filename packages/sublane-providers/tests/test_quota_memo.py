"""Quota headers are parsed once per change of the headers a parser reads (issue #19).

What may be reused: the parse of the same relevant raw headers less than a second ago. The
providers' own tests check, by property, that the relevant names are all their parsers read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from sublane_providers import ResponseHeaders
from sublane_providers.kit import MEMO_MAX_AGE_S, QuotaHeaderMemo

NOW = 1_000_000.0
RELEVANT = re.compile(rb"x-acme-(?:plan|used|window|reset)")
HEADERS = [
    ("x-acme-plan", "plus"),
    ("x-acme-used-percent", "41"),
    ("x-acme-window-minutes", "300"),
    ("x-acme-reset-after-seconds", "18000"),
    ("x-request-id", "req_1"),
]


def _headers(pairs: Iterable[tuple[str, str]] | Mapping[str, str]) -> ResponseHeaders:
    """An answer's headers as the model pool parses them."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return ResponseHeaders([(name.encode(), name.lower().encode(), value.encode()) for name, value in items])


def _counting_memo() -> tuple[QuotaHeaderMemo, list[float]]:
    parsed: list[float] = []

    def parse(headers: object, now: float) -> tuple[None, tuple[()]]:
        parsed.append(now)
        return None, ()

    return QuotaHeaderMemo(parse, RELEVANT), parsed  # type: ignore[arg-type]


def test_the_same_quota_headers_within_a_second_are_parsed_once() -> None:
    memo, parsed = _counting_memo()
    memo(_headers(HEADERS), NOW)
    memo(_headers([*HEADERS[:-1], ("x-request-id", "req_2")]), NOW + 0.5)  # only the request ID moved
    assert parsed == [NOW]


def test_a_changed_value_an_older_parse_or_a_clock_going_back_parse_again() -> None:
    memo, parsed = _counting_memo()
    memo(_headers(HEADERS), NOW)
    memo(_headers([*HEADERS[:1], ("x-acme-used-percent", "42"), *HEADERS[2:]]), NOW + 0.1)
    memo(_headers(HEADERS), NOW + MEMO_MAX_AGE_S)
    memo(_headers(HEADERS), NOW - 5)
    assert parsed == [NOW, NOW + 0.1, NOW + MEMO_MAX_AGE_S, NOW - 5]


def test_a_plain_mapping_is_parsed_every_time() -> None:
    memo, parsed = _counting_memo()
    memo(dict(HEADERS), NOW)
    memo(dict(HEADERS), NOW)
    assert parsed == [NOW, NOW]
