"""Claude quota headers through the memo: the same answer as the parser, and only the relevant
headers read (issue #19)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hypothesis import given
from hypothesis import strategies as st

from sublane_provider_claude import windows_from_headers as claude_windows
from sublane_provider_claude._quota import remembered_windows_from_headers as claude_memo
from sublane_providers import ResponseHeaders

NOW = 1_000_000.0


def _headers(pairs: Iterable[tuple[str, str]] | Mapping[str, str]) -> ResponseHeaders:
    """An answer's headers as the model pool parses them."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return ResponseHeaders([(name.encode(), name.lower().encode(), value.encode()) for name, value in items])


def test_the_memo_answers_what_the_parser_answers() -> None:
    claude = _headers(
        {
            "anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-5h-utilization": "0.25",
            "anthropic-ratelimit-unified-5h-reset": str(int(NOW) + 3600),
        }
    )
    assert claude_memo(claude, NOW) == claude_windows(claude, NOW)


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
