"""Quota headers are parsed once per change of the headers a parser reads (issue #19).

What may be reused: the parse of the same relevant raw headers less than a second ago. The
property tests check that the relevant names are all a parser reads: answers that differ only
elsewhere (request IDs, other vendors' headers) parse the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hypothesis import given
from hypothesis import strategies as st

from sublane_providers import ResponseHeaders
from sublane_providers._quota_headers import MEMO_MAX_AGE_S, QuotaHeaderMemo
from sublane_providers.claude import windows_from_headers as claude_windows
from sublane_providers.claude._quota import remembered_windows_from_headers as claude_memo
from sublane_providers.codex import windows_from_headers as codex_windows
from sublane_providers.codex._quota import _RELEVANT as CODEX_RELEVANT
from sublane_providers.codex._quota import remembered_windows_from_headers as codex_memo

NOW = 1_000_000.0
CODEX = [
    ("x-codex-plan-type", "plus"),
    ("x-codex-primary-used-percent", "41"),
    ("x-codex-primary-window-minutes", "300"),
    ("x-codex-primary-reset-after-seconds", "18000"),
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

    return QuotaHeaderMemo(parse, CODEX_RELEVANT), parsed  # type: ignore[arg-type]


def test_the_same_quota_headers_within_a_second_are_parsed_once() -> None:
    memo, parsed = _counting_memo()
    memo(_headers(CODEX), NOW)
    memo(_headers([*CODEX[:-1], ("x-request-id", "req_2")]), NOW + 0.5)  # only the request ID moved
    assert parsed == [NOW]


def test_a_changed_value_an_older_parse_or_a_clock_going_back_parse_again() -> None:
    memo, parsed = _counting_memo()
    memo(_headers(CODEX), NOW)
    memo(_headers([*CODEX[:1], ("x-codex-primary-used-percent", "42"), *CODEX[2:]]), NOW + 0.1)
    memo(_headers(CODEX), NOW + MEMO_MAX_AGE_S)
    memo(_headers(CODEX), NOW - 5)
    assert parsed == [NOW, NOW + 0.1, NOW + MEMO_MAX_AGE_S, NOW - 5]


def test_a_plain_mapping_is_parsed_every_time() -> None:
    memo, parsed = _counting_memo()
    memo(dict(CODEX), NOW)
    memo(dict(CODEX), NOW)
    assert parsed == [NOW, NOW]


def test_the_memo_answers_what_the_parser_answers() -> None:
    headers = _headers(CODEX)
    assert codex_memo(headers, NOW) == codex_windows(headers, NOW)
    claude = _headers(
        {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-5h-utilization": "0.25",
            "anthropic-ratelimit-unified-5h-reset": str(int(NOW) + 3600),
        }
    )
    assert claude_memo(claude, NOW) == claude_windows(claude, NOW)
    assert codex_memo(headers, NOW + 0.2) is codex_memo(headers, NOW + 0.3)  # the same parse, reused


_FAMILY = st.sampled_from(["codex", "codex_other", "gpt-5-pro"])
_WINDOW = st.sampled_from(["primary", "secondary"])
_FIELD = st.sampled_from(["used-percent", "window-minutes", "reset-at", "reset-after-seconds"])
_VALUE = st.sampled_from(["0", "12.5", "100", "300", "1000500", " 7 ", "x"])
_WINDOW_HEADER = st.tuples(st.builds(lambda f, w, x: f"x-{f}-{w}-{x}", _FAMILY, _WINDOW, _FIELD), _VALUE)
_PLAN = st.tuples(st.just("x-codex-plan-type"), st.sampled_from(["plus", "pro", "team"]))
_OTHER = st.tuples(
    st.sampled_from(["x-request-id", "x-codex-active-limit", "x-envoy-upstream-service-time", "server"]),
    st.text("abcdef0123456789", min_size=1, max_size=8),
)


@given(
    st.lists(st.one_of(_WINDOW_HEADER, _PLAN), max_size=10),
    st.lists(_OTHER, max_size=4),
    st.lists(_OTHER, max_size=4),
)
def test_codex_answers_differing_only_in_other_headers_parse_the_same(
    relevant: list[tuple[str, str]], first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    one, two = _headers([*first, *relevant]), _headers([*relevant, *second])
    assert codex_windows(one, NOW) == codex_windows(two, NOW)
    assert all(CODEX_RELEVANT.match(name.encode()) for name, _ in relevant)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "anthropic-ratelimit-unified-status",
                    "anthropic-ratelimit-unified-reset",
                    "anthropic-ratelimit-unified-5h-utilization",
                    "anthropic-ratelimit-unified-5h-reset",
                    "anthropic-ratelimit-unified-7d-utilization",
                    "anthropic-ratelimit-unified-7d-status",
                ]
            ),
            st.sampled_from(["allowed", "rejected", "0.5", "1.0", "1000500", "x"]),
        ),
        max_size=8,
    ),
    st.lists(
        st.tuples(st.sampled_from(["request-id", "x-request-id", "cf-ray"]), st.text("ab01", max_size=6))
    ),
)
def test_claude_answers_differing_only_in_other_headers_parse_the_same(
    relevant: list[tuple[str, str]], other: list[tuple[str, str]]
) -> None:
    assert claude_windows(_headers([*relevant, *other]), NOW) == claude_windows(_headers(relevant), NOW)
