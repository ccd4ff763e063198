"""Codex quota headers through the memo: the same answer as the parser, and only the relevant
headers read (issue #19)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hypothesis import given
from hypothesis import strategies as st

from sublane_provider_codex import windows_from_headers as codex_windows
from sublane_provider_codex._quota import RELEVANT_HEADERS as CODEX_RELEVANT
from sublane_provider_codex._quota import remembered_windows_from_headers as codex_memo
from sublane_providers import ResponseHeaders

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


def test_the_memo_answers_what_the_parser_answers() -> None:
    headers = _headers(CODEX)
    assert codex_memo(headers, NOW) == codex_windows(headers, NOW)
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
